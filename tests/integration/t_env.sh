# Environment policy: only PATH HOME USER SHELL TERM LANG by default; --env, --allow-env,
# bare --allow-env, --deny-env; odd values; 100,000 caller variables.
. "$(dirname "$0")/lib.sh"

keys() { printf '%s\n' "$OUT" | sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\)=.*/\1/p' | sort | tr '\n' ' '; }
CALLER=(env FOO=bar SECRET_TOKEN=hunter2 XDG_RUNTIME_DIR=/run/user/1 LD_PRELOAD=/x.so LC_ALL=C "BASH_FUNC_f%%=() { echo hi; }")
zbe() { run "${CALLER[@]}" "$ZEROBOX" "$@"; }

zbe -- env; expect_rc 0 "env runs"
expect_eq "$(keys)" "HOME LANG PATH SHELL TERM USER " "default: exactly PATH HOME USER SHELL TERM LANG"
expect_contains "$OUT" "HOME=$HOME" "HOME passed unchanged"
expect_contains "$OUT" "PATH=$PATH" "PATH passed unchanged"
expect_not_contains "$OUT" hunter2 "no secret value"
zbe --env K=V --env EMPTY= --env 'EQ=a=b' --env PATH=/usr/bin:/bin -- env
expect_eq "$(keys)" "EMPTY EQ HOME K LANG PATH SHELL TERM USER " "--env adds variables"
expect_contains "$OUT" "K=V" "--env K=V"
expect_contains "$OUT" "EQ=a=b" "--env value with ="
expect_contains "$OUT" "PATH=/usr/bin:/bin" "--env overrides PATH"
zbe --env K=1 --env K=2 -- sh -c 'echo $K'; expect_out 2 "the last --env wins"
zbe --allow-env=FOO -- env; expect_eq "$(keys)" "FOO HOME LANG PATH SHELL TERM USER " "--allow-env=FOO"
expect_contains "$OUT" "FOO=bar" "--allow-env value"
zbe --allow-env=FOO,SECRET_TOKEN -- env; expect_eq "$(keys)" "FOO HOME LANG PATH SECRET_TOKEN SHELL TERM USER " "--allow-env list"
zbe --allow-env=FOO --allow-env=LC_ALL -- env; expect_eq "$(keys)" "FOO HOME LANG LC_ALL PATH SHELL TERM USER " "repeated --allow-env adds"
zbe --allow-env=NOPE_NOT_SET -- env; expect_eq "$(keys)" "HOME LANG PATH SHELL TERM USER " "--allow-env of an unset variable"
zbe --allow-env -- env
expect_contains "$(keys)" "FOO " "bare --allow-env: FOO"
expect_contains "$(keys)" "SECRET_TOKEN " "bare --allow-env: SECRET_TOKEN"
expect_contains "$(keys)" "LD_PRELOAD " "bare --allow-env: everything"
zbe --allow-env --deny-env=SECRET_TOKEN,LD_PRELOAD -- env
expect_not_contains "$OUT" hunter2 "--deny-env wins over bare --allow-env"
expect_not_contains "$OUT" LD_PRELOAD "--deny-env list"
expect_contains "$OUT" FOO=bar "--deny-env keeps the rest"
zbe --allow-env=FOO --deny-env=FOO -- env; expect_not_contains "$OUT" FOO= "--deny-env wins over --allow-env=K"
zbe --deny-env=HOME -- env; expect_eq "$(keys)" "LANG PATH SHELL TERM USER " "--deny-env of a default variable"
zbe --no-sandbox -- env; expect_eq "$(keys)" "HOME LANG PATH SHELL TERM USER " "--no-sandbox: same environment policy"
zbe --no-sandbox --env A=B --allow-env=FOO -- env; expect_eq "$(keys)" "A FOO HOME LANG PATH SHELL TERM USER " "--no-sandbox: --env and --allow-env"
zbe -A -- env; expect_eq "$(keys)" "HOME LANG PATH SHELL TERM USER " "-A: environment policy still applies"
run env -i PATH="$PATH" "$ZEROBOX" -- env; expect_eq "$(keys)" "PATH " "variables the caller lacks are not invented"

# The caller's other variables are not readable anywhere else in the sandbox either.
zbe -- sh -c 'for p in /proc/[0-9]*; do tr "\0" "\n" < $p/environ; done 2>/dev/null'
expect_not_contains "$OUT" hunter2 "no process in the sandbox (init included) shows the caller's full environment"
if [ -x "$PY" ]; then
  zbe -- "$PY" -c '
import os
hits = []
for pid in [p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]:
    try:
        maps = open("/proc/%s/maps" % pid).read().splitlines()
        mem = open("/proc/%s/mem" % pid, "rb", 0)
    except OSError:
        continue
    for line in maps:
        rng, perms = line.split()[:2]
        a, b = (int(x, 16) for x in rng.split("-"))
        if "r" not in perms or b - a > 1 << 26:
            continue
        try:
            mem.seek(a)
            if b"hunter2" in mem.read(b - a):
                hits.append(pid + ":" + (line.split()[5] if len(line.split()) > 5 else "anon"))
        except OSError:
            pass
print(" ".join(hits))'
  expect_out_empty "no process memory in the sandbox (init included) holds the caller's other variables"
fi

NL=$'line1\nline2 \t "quoted" $dollar \\ üñí'
run env "ODD=$NL" "$ZEROBOX" --allow-env=ODD -- "$PY" -c 'import os,sys; sys.stdout.write(os.environ["ODD"])' 2>/dev/null
if [ -x "$PY" ]; then
  expect_eq "$OUT" "$NL" "a value with newlines, tabs, quotes and UTF-8 passes unchanged"
fi
run "$ZEROBOX" --env "ODD=$NL" -- printenv ODD; expect_eq "$OUT" "$NL" "--env with newlines and UTF-8"

# 100,000 variables in the caller's environment: no crash, no hang.
# (python builds the environment: bash takes about 20 s to exec 100,000 words)
need_python
big() { # ZEROBOX ARGS...
  run timeout 60 "$PY" -c 'import os, sys
env = {"PATH": os.environ["PATH"], "HOME": os.environ["HOME"], "V_LAST": "last"}
env.update(("V%d" % i, "") for i in range(100000))
os.execve(sys.argv[1], sys.argv[1:], env)' "$ZEROBOX" "$@"
  LAST_CMD="timeout 60 env -i PATH=... HOME=... V0= ... V99999= V_LAST=last zerobox $*"
}
big -- env; expect_rc 0 "100,000 caller variables: runs"
expect_eq "$(printf '%s\n' "$OUT" | wc -l)" 2 "100,000 caller variables: only the defaults pass"
big --allow-env=V_LAST -- printenv V_LAST; expect_out last "100,000 caller variables: --allow-env=K"
big --allow-env -- sh -c 'env | grep -c "^V"'; expect_rc 0 "100,000 variables passed with bare --allow-env"
expect_eq "$OUT" 100001 "all 100,001 variables arrive"
big --no-sandbox -- true; expect_rc 0 "100,000 caller variables with --no-sandbox"
finish
