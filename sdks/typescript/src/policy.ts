// The sandbox policy as options, and its translation to zerobox flags. Nothing here
// touches the system, so the command line can be checked without running zerobox.

/** One path, host or name, or several. A single string is one item, never split. */
export type List = string | readonly string[];

/** What `--snapshot`, `--restore` and `--review` do with the command's writes. */
export type SnapshotMode = "snapshot" | "restore" | "review";

/** The policy of a {@link Sandbox}: which flags zerobox gets, and its own environment. */
export interface SandboxOptions {
  /** `--allow-read`: readable user data is limited to these paths. */
  allowRead?: List;
  /** `--deny-read`: these paths cannot be read. */
  denyRead?: List;
  /** `--allow-write`: these paths are writable; `true` makes everything writable. */
  allowWrite?: boolean | List;
  /** `--deny-write`: these paths stay read-only even inside a writable path. */
  denyWrite?: List;
  /** `--allow-net`: only these hosts (through zerobox's proxy); `true` for full network. */
  allowNet?: boolean | List;
  /** `--deny-net`: never these hosts. */
  denyNet?: List;
  /** `--allow-env`: inherit these variables of zerobox's environment; `true` for all. */
  allowEnv?: boolean | List;
  /** `--deny-env`: drop these variables. */
  denyEnv?: List;
  /** `--env KEY=VALUE`: variables set inside the sandbox. They appear in zerobox's argv. */
  env?: Readonly<Record<string, string>>;
  /**
   * Secrets by name: the command sees `KEY=ZEROBOX_SECRET_…` and zerobox's proxy puts
   * the real value into requests to the secret's hosts. The value never appears in any
   * argv: it is put into zerobox's own environment as KEY, and zerobox gets `--secret KEY`.
   */
  secrets?: Readonly<Record<string, string>>;
  /** `--secret-file KEY=PATH`: secrets whose value zerobox reads from a file. */
  secretFiles?: Readonly<Record<string, string>>;
  /** `--secret-host KEY=H,…`: the only hosts that get the real value of KEY. */
  secretHosts?: Readonly<Record<string, List>>;
  /** `--resolve HOST:IP`, as `["api.test:127.0.0.1"]` or `{ "api.test": "127.0.0.1" }`. */
  resolve?: readonly string[] | Readonly<Record<string, string>>;
  /** `--upstream-ca`: extra CA files the proxy trusts when it verifies upstream TLS. */
  upstreamCa?: List;
  /** `-C DIR`: the command's working directory. */
  cwd?: string;
  /** Record the command's writes as a session: `--snapshot`, `--restore` or `--review`. */
  snapshot?: SnapshotMode;
  /** `--snapshot-path`: the tracked paths. */
  snapshotPaths?: List;
  /** `--snapshot-exclude`: gitignore-like patterns applied directly and never journaled. */
  snapshotExclude?: List;
  /** `--no-protect`: turn off the protected paths. */
  noProtect?: boolean;
  /**
   * `--strict-sandbox`: fail the run with a setup error rather than run it with a
   * weaker isolation layer (today: when Landlock is unavailable).
   */
  strict?: boolean;
  /** `--quiet`: no zerobox messages on stderr except errors. */
  quiet?: boolean;
  /** The zerobox executable; else `$ZEROBOX_BIN`, else `zerobox` on `PATH`. */
  binary?: string;
  /**
   * Variables added to zerobox's own environment (not the command's), for example
   * `ZEROBOX_HOME`; `undefined` removes a variable.
   */
  hostEnv?: Readonly<Record<string, string | undefined>>;
}

/** The flags for a policy, and the variables zerobox itself needs for its secrets. */
export interface CompiledPolicy {
  args: string[];
  secretEnv: Record<string, string>;
}

const SNAPSHOT_MODES: readonly string[] = ["snapshot", "restore", "review"];

/** `a,b` → `a\,b`: zerobox splits list values at commas that are not escaped. */
export function escapeListItem(item: string): string {
  return item.replaceAll(",", "\\,");
}

function items(option: string, value: List): string[] {
  const list = typeof value === "string" ? [value] : [...value];
  for (const item of list) {
    if (typeof item !== "string" || item === "") {
      throw new TypeError(`${option}: every item must be a non-empty string`);
    }
  }
  return list;
}

/**
 * `--NAME=a,b,...`, commas inside items escaped. zerobox reads `\,` as a comma even
 * after a backslash, so an item that ends in a backslash closes its flag and the rest
 * go into another one (repeating a list flag adds to the list).
 */
export function listFlags(name: string, option: string, value: List | undefined): string[] {
  if (value === undefined) return [];
  const out: string[] = [];
  let group: string[] = [];
  for (const item of items(option, value)) {
    group.push(escapeListItem(item));
    if (item.endsWith("\\")) {
      out.push(`--${name}=${group.join(",")}`);
      group = [];
    }
  }
  if (group.length > 0) out.push(`--${name}=${group.join(",")}`);
  return out;
}

function optionalListFlags(name: string, option: string, value: boolean | List | undefined): string[] {
  if (value === undefined || value === false) return [];
  if (value === true) return [`--${name}`];
  return listFlags(name, option, value);
}

function checkName(option: string, key: string): void {
  if (key === "" || key.includes("=") || key.includes("\0")) {
    throw new TypeError(`${option}: invalid variable name ${JSON.stringify(key)}`);
  }
}

/** Translates a policy into zerobox flags (everything before `--status-fd` and `--`). */
export function compilePolicy(o: SandboxOptions): CompiledPolicy {
  if (o.snapshot !== undefined && !SNAPSHOT_MODES.includes(o.snapshot)) {
    throw new TypeError(`snapshot must be "snapshot", "restore" or "review", not ${JSON.stringify(o.snapshot)}`);
  }
  const a: string[] = [];
  a.push(...listFlags("allow-read", "allowRead", o.allowRead));
  a.push(...listFlags("deny-read", "denyRead", o.denyRead));
  a.push(...optionalListFlags("allow-write", "allowWrite", o.allowWrite));
  a.push(...listFlags("deny-write", "denyWrite", o.denyWrite));
  a.push(...optionalListFlags("allow-net", "allowNet", o.allowNet));
  a.push(...listFlags("deny-net", "denyNet", o.denyNet));
  a.push(...optionalListFlags("allow-env", "allowEnv", o.allowEnv));
  a.push(...listFlags("deny-env", "denyEnv", o.denyEnv));
  for (const [key, value] of Object.entries(o.env ?? {})) {
    checkName("env", key);
    a.push("--env", `${key}=${value}`);
  }
  const resolve = o.resolve ?? [];
  const mappings = Array.isArray(resolve)
    ? items("resolve", resolve as readonly string[])
    : Object.entries(resolve).map(([host, ip]) => `${host}:${ip}`);
  for (const m of mappings) a.push("--resolve", m);
  a.push(...listFlags("upstream-ca", "upstreamCa", o.upstreamCa));

  // Kept out of `args`, so that nothing that shows the policy shows the values.
  const secretEnv = new Map<string, string>();
  for (const [key, value] of Object.entries(o.secrets ?? {})) {
    checkName("secrets", key);
    if (typeof value !== "string" || value.includes("\0")) {
      throw new TypeError(`secrets: the value of ${key} must be a string without NUL`);
    }
    secretEnv.set(key, value);
    a.push("--secret", key);
  }
  for (const [key, path] of Object.entries(o.secretFiles ?? {})) {
    checkName("secretFiles", key);
    if (secretEnv.has(key)) throw new TypeError(`secret ${key} is in both secrets and secretFiles`);
    a.push("--secret-file", `${key}=${path}`);
  }
  for (const [key, hosts] of Object.entries(o.secretHosts ?? {})) {
    checkName("secretHosts", key);
    const list = items("secretHosts", hosts);
    if (list.length === 0) throw new TypeError(`secretHosts: ${key} needs at least one host`);
    a.push("--secret-host", `${key}=${list.map(escapeListItem).join(",")}`);
  }
  if (o.snapshot !== undefined) a.push(`--${o.snapshot}`);
  a.push(...listFlags("snapshot-path", "snapshotPaths", o.snapshotPaths));
  a.push(...listFlags("snapshot-exclude", "snapshotExclude", o.snapshotExclude));
  if (o.noProtect) a.push("--no-protect");
  if (o.strict) a.push("--strict-sandbox");
  if (o.quiet) a.push("--quiet");
  if (o.cwd !== undefined) a.push("-C", o.cwd);
  return { args: a, secretEnv: Object.fromEntries(secretEnv) };
}
