#!/usr/bin/env bash
# pkg.docs.WHAT: the man page and the shell completions that zb_docs_gen generates from the
# CLI definition name every long option `zerobox --help` (and `zerobox snapshot SUB --help`)
# shows, the shells accept the scripts, and they complete what they should.
#   docs.sh man|bash|zsh|fish ZEROBOX DOCS_DIR
#   docs.sh reference ZEROBOX DOCS_DIR SOURCE_DIR: the generated docs/cli-reference.md names
#   every option and subcommand, and the checked-in copy in SOURCE_DIR is that file.
# Exit 77 (skipped) when the shell or man/groff is not installed.
set -uo pipefail
what=$1 zerobox=$2 docs=$3 source=${4-}

failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
skip() {
  echo "SKIP: $*"
  exit 77
}

# Every long option of the run command and of each snapshot subcommand, from --help.
run_opts=$("$zerobox" --help | grep -oE -- '--[a-z][a-z-]*' | sort -u)
subs=$("$zerobox" snapshot --help | sed -n '/^Subcommands:/,/^$/p' | awk 'NR > 1 && NF {print $1}')
[ -n "$run_opts" ] || fail "no options found in zerobox --help"
[ "$(echo "$subs" | wc -w)" -ge 7 ] || fail "expected 7 snapshot subcommands in zerobox snapshot --help, got: $subs"
declare -A sub_opts
for s in $subs; do
  sub_opts[$s]=$("$zerobox" snapshot "$s" --help | grep -oE -- '--[a-z][a-z-]*' | sort -u)
done
all_opts=$(printf '%s\n' "$run_opts" "${sub_opts[@]}" | sort -u)

# has FILE TEXT...: FILE contains each TEXT as a whole word (an option name is a prefix of others).
has() {
  local file=$1 t
  shift
  for t in "$@"; do
    grep -qE -- "(^|[^a-z-])$t([^a-z-]|\$)" "$file" || fail "$(basename "$file"): no $t"
  done
}

# complete_bash WORDS...: COMPREPLY of the bash completion for a command line whose last
# word is the one being completed, one per line.
complete_bash() {
  bash -c '
    source "$1"; shift
    COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
    _zerobox
    printf "%s\n" "${COMPREPLY[@]}"
  ' bash "$docs/zerobox.bash" "$@"
}
# expect_bash "WANT" WORDS...: WANT is among the completions.
expect_bash() {
  local want=$1 got
  shift
  got=$(complete_bash "$@")
  grep -qxF -- "$want" <<<"$got" || fail "bash: completing '$*' gave [$(tr '\n' ' ' <<<"$got")], not $want"
}
expect_bash_only() {
  local want=$1 got
  shift
  got=$(complete_bash "$@")
  [ "$got" = "$want" ] || fail "bash: completing '$*' gave [$(tr '\n' ' ' <<<"$got")], want exactly [$want]"
}

case $what in
  man)
    page=$docs/zerobox.1
    [ -s "$page" ] || { fail "$page missing"; exit 1; }
    plain=$(mktemp)
    trap 'rm -f "$plain"' EXIT
    sed 's/\\-/-/g' "$page" >"$plain"
    has "$plain" $all_opts
    for s in $subs; do grep -q "zerobox snapshot $s" "$plain" || fail "zerobox.1: no 'zerobox snapshot $s'"; done
    for section in NAME SYNOPSIS DESCRIPTION OPTIONS 'SNAPSHOT COMMANDS' 'EXIT STATUS' ENVIRONMENT FILES EXAMPLES 'SEE ALSO'; do
      grep -qx "\.SH \"\?$section\"\?" "$page" || fail "zerobox.1: no section $section"
    done
    for var in ZEROBOX_HOME XDG_STATE_HOME XDG_CONFIG_HOME NO_COLOR; do
      grep -q "$var" "$page" || fail "zerobox.1: ENVIRONMENT does not mention $var"
    done
    # The version is the binary's.
    version=$("$zerobox" --version | awk '{print $2}')
    grep -q "^\.TH ZEROBOX 1 \"\" \"zerobox $version\"" "$page" || fail "zerobox.1: .TH does not carry version $version"
    command -v groff >/dev/null || skip "groff is not installed (apt-get install groff-base): the page was not rendered"
    # groff's own warnings (-ww) about the roff: none expected.
    warnings=$(groff -man -Tutf8 -ww -z "$page" 2>&1)
    [ -z "$warnings" ] || fail "groff warns: $warnings"
    command -v man >/dev/null || skip "man is not installed (apt-get install man-db)"
    rendered=$(mktemp)
    trap 'rm -f "$plain" "$rendered"' EXIT
    MANWIDTH=80 man -l "$page" 2>&1 | col -b >"$rendered"
    grep -q '^NAME' "$rendered" || fail "man -l did not render the page"
    has "$rendered" $all_opts
    ;;

  reference)
    made=$docs/cli-reference.md
    [ -s "$made" ] || { fail "$made missing"; exit 1; }
    has "$made" $all_opts
    for s in $subs; do grep -q "zerobox snapshot $s" "$made" || fail "cli-reference.md: no 'zerobox snapshot $s'"; done
    if ! diff -u "$source/docs/cli-reference.md" "$made"; then
      fail "docs/cli-reference.md is not what the build makes from docs/cli-reference.md.in and docs/flags.toml: run 'cmake --build BUILD --target update-docs'"
    fi
    ;;

  bash)
    script=$docs/zerobox.bash
    bash -n "$script" || fail "bash -n rejects $script"
    has "$script" $all_opts
    expect_bash_only --allow-write zerobox --allow-w
    expect_bash --allow-read zerobox --allow-r
    expect_bash -C zerobox -
    expect_bash_only snapshot zerobox snaps
    expect_bash /usr zerobox --allow-read /us
    expect_bash /usr zerobox --allow-read = /us          # --allow-read=/us, split at "="
    expect_bash /usr zerobox --allow-write = /us
    expect_bash /usr zerobox -C /us
    expect_bash_only "" zerobox --resolve example.c       # no completion for HOST:IP
    expect_bash echo zerobox --allow-read /tmp ech        # the value is skipped: the command
    expect_bash /usr zerobox --allow-write /us            # an optional value as the next word
    expect_bash echo zerobox --allow-write /tmp ech       # ... is skipped: the command
    expect_bash echo zerobox --allow-write -- ech         # a bare --allow-write before --
    expect_bash echo zerobox --allow-write -C /tmp ech    # ... or before another option
    expect_bash --debug zerobox --allow-write --de        # an option after a bare one
    expect_bash echo zerobox -- ech
    expect_bash_only diff zerobox snapshot dif
    expect_bash_only --color zerobox snapshot diff --co
    expect_bash_only always zerobox snapshot diff --color = al
    expect_bash_only last zerobox snapshot accept l
    expect_bash_only --force zerobox snapshot restore last --f
    expect_bash_only --older-than zerobox snapshot clean --o
    expect_bash /usr zerobox snapshot diff last /us     # PATH... after the id
    # Every snapshot subcommand's options are offered for it.
    for s in $subs; do
      for o in ${sub_opts[$s]}; do expect_bash "$o" zerobox snapshot "$s" "$o"; done
    done
    ;;

  zsh)
    script=$docs/_zerobox
    command -v zsh >/dev/null || skip "zsh is not installed (apt-get install zsh)"
    zsh -n "$script" || fail "zsh -n rejects $script"
    head -1 "$script" | grep -qx '#compdef zerobox' || fail "_zerobox does not start with #compdef zerobox"
    has "$script" $all_opts
    # It loads as an autoloaded completion function.
    dir=$(mktemp -d)
    trap 'rm -rf "$dir"' EXIT
    cp "$script" "$dir/"
    out=$(HOME=$dir zsh -f -c "fpath=($dir \$fpath); autoload -Uz compinit; compinit -u -d $dir/.zcompdump; print -r -- \$_comps[zerobox]" 2>&1)
    [ "$out" = _zerobox ] || fail "compinit did not register _zerobox for zerobox: $out"
    ;;

  fish)
    script=$docs/zerobox.fish
    command -v fish >/dev/null || skip "fish is not installed (apt-get install fish)"
    fish -n "$script" || fail "fish -n rejects $script"
    for o in $all_opts; do
      grep -qE -- "-l ${o#--}( |\$)" "$script" || fail "zerobox.fish: no -l ${o#--}"
    done
    expect_fish() {
      local want=$1 line=$2 got
      got=$(fish -c "source $script; complete -C '$line'" 2>&1 | cut -f1)
      grep -qxF -- "$want" <<<"$got" || fail "fish: completing '$line' gave [$(tr '\n' ' ' <<<"$got")], not $want"
    }
    expect_fish --allow-write 'zerobox --allow-w'
    expect_fish --allow-read=/usr/ 'zerobox --allow-read=/us'
    expect_fish --allow-write=/usr/ 'zerobox --allow-write=/us'
    expect_fish /usr/ 'zerobox -C /us'
    expect_fish snapshot 'zerobox snaps'
    expect_fish diff 'zerobox snapshot dif'
    expect_fish --color=never 'zerobox snapshot diff --color='
    expect_fish echo 'zerobox --allow-read /tmp ech'
    expect_fish echo 'zerobox --allow-write /tmp ech'   # an optional value as the next word
    expect_fish echo 'zerobox --allow-write -- ech'
    ;;

  *)
    echo "usage: docs.sh man|bash|zsh|fish ZEROBOX DOCS_DIR" >&2
    exit 2
    ;;
esac

if [ "$failures" -gt 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "ok: $what"
