// An agent's tool call, sandboxed and reviewed.
//
// A language model (here the Vercel AI SDK's mock model, so this runs with no network
// and no API key, through the SDK's real tool-call loop) asks to call a `run_shell`
// tool. The tool runs the command with zerobox: no network, writable only in a work
// directory, in `review` mode, so its writes wait in a session instead of landing. The
// host then reads the structured diff, accepts it if every change stays in the work
// directory, and shows that the file landed.
//
// Every step is checked; any failure exits non-zero.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, sep } from "node:path";

import { generateText, stepCountIs, tool } from "ai";
import { MockLanguageModelV2 } from "ai/test";
import { z } from "zod";
import { Sandbox, snapshots, type Diff } from "zerobox";

const COMMAND = [
  "printf 'hello from the sandbox\\n' > hello.txt && echo 'wrote hello.txt'",
  "if curl -s --max-time 5 http://example.com >/dev/null 2>&1; then echo 'network: reachable'; else echo 'network: none'; fi",
  "if touch /usr/local/zerobox-example 2>/dev/null; then echo 'outside the work dir: writable'; else echo 'outside the work dir: read-only'; fi",
].join("\n");

function check(ok: boolean, what: string): asserts ok {
  if (!ok) throw new Error(`check failed: ${what}`);
}

/** What the run_shell tool hands back to the model. */
interface ShellOutput {
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  sessionId: string | null;
  pendingChanges: number | null;
}

/** The host's review: accept only changes to regular files inside the work directory. */
function approve(diff: Diff, work: string): boolean {
  return diff.changes.length > 0 && diff.changes.every((c) =>
    c.path !== undefined && c.path.startsWith(work + sep) && (c.kind === "added" || c.kind === "modified") && c.new_type === "file");
}

async function main(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), "zerobox-agent-"));
  try {
    const work = join(root, "work");
    const hostEnv = { ZEROBOX_HOME: join(root, "store") }; // a private snapshot store
    mkdirSync(work);

    // No allowNet: no network at all. Writable only in `work`, and only after review.
    const sandbox = new Sandbox({ allowWrite: [work], cwd: work, snapshot: "review", quiet: true, hostEnv });

    const runShell = tool({
      description: "Run a shell command in the project directory. No network; file changes are reviewed before they land.",
      inputSchema: z.object({ command: z.string().describe("a POSIX shell command") }),
      execute: async ({ command }, { abortSignal }): Promise<ShellOutput> => {
        const r = await sandbox.run("sh", ["-c", command], { timeout: 60_000, ...(abortSignal ? { signal: abortSignal } : {}) });
        return {
          exitCode: r.exitCode,
          signal: r.signalName,
          stdout: r.text(),
          stderr: r.stderr.toString("utf8"),
          sessionId: r.sessionId,
          pendingChanges: r.sessionChanges,
        };
      },
    });

    // The mock model: first it asks for the tool call, then it answers from the tool's result.
    const model = new MockLanguageModelV2({
      doGenerate: async ({ prompt }) => {
        const usage = { inputTokens: 10, outputTokens: 10, totalTokens: 20 };
        const toolMessage = prompt.find((m) => m.role === "tool");
        if (toolMessage === undefined) {
          return {
            content: [{ type: "tool-call", toolCallId: "call-1", toolName: "run_shell", input: JSON.stringify({ command: COMMAND }) }],
            finishReason: "tool-calls",
            usage,
            warnings: [],
          };
        }
        const part = toolMessage.content[0];
        const output = part?.type === "tool-result" && part.output.type === "json" ? (part.output.value as unknown as ShellOutput) : null;
        const text = output
          ? `The command exited ${output.exitCode}; session ${output.sessionId} holds ${output.pendingChanges} change(s) for review.`
          : "The tool call failed.";
        return { content: [{ type: "text", text }], finishReason: "stop", usage, warnings: [] };
      },
    });

    const result = await generateText({
      model,
      tools: { run_shell: runShell },
      stopWhen: stepCountIs(3),
      prompt: "Create hello.txt saying hello, and tell me whether you have network access.",
    });

    // The AI SDK hands a tool's exception to the model as a tool-error, so look for one.
    for (const part of result.steps.flatMap((s) => s.content)) {
      if (part.type === "tool-error") {
        throw new Error(`the ${part.toolName} tool failed: ${part.error instanceof Error ? part.error.message : String(part.error)}`);
      }
    }
    const calls = result.steps.flatMap((s) => s.toolResults);
    check(calls.length === 1 && calls[0]?.toolName === "run_shell", "the model called run_shell once");
    const out = calls[0].output as ShellOutput;
    console.log(`model asked for:\n${COMMAND.replace(/^/gm, "  $ ")}`);
    console.log(`tool result: exit ${out.exitCode}\n${out.stdout.trimEnd().replace(/^/gm, "  | ")}`);
    console.log(`model says: ${result.text}`);
    check(out.exitCode === 0, `the command succeeded (stderr: ${out.stderr})`);
    check(out.stdout.includes("network: none"), "the sandbox has no network");
    check(out.stdout.includes("outside the work dir: read-only"), "the sandbox cannot write outside the work dir");
    check(out.sessionId !== null, "the run recorded a session");

    const hello = join(work, "hello.txt");
    check(!existsSync(hello), "in review mode nothing lands before it is accepted");

    const diff = await snapshots.diff(out.sessionId, { hostEnv });
    console.log(`diff of session ${diff.session}:`);
    for (const c of diff.changes) console.log(`  ${c.kind} ${c.path} (${c.new_type}, ${c.new_size} bytes)`);
    check(diff.changes.some((c) => c.path === hello && c.kind === "added"), "the diff shows hello.txt added");

    if (!approve(diff, work)) {
      await snapshots.discard(out.sessionId, { hostEnv });
      throw new Error("the review refused the changes; the session was discarded");
    }
    await snapshots.accept(out.sessionId, { hostEnv });
    const info = await snapshots.show(out.sessionId, { hostEnv });
    check(info.state === "accepted", `the session is accepted (state ${info.state})`);
    const content = readFileSync(hello, "utf8");
    console.log(`accepted; ${hello} now reads: ${JSON.stringify(content)}`);
    check(content === "hello from the sandbox\n", "the accepted file has the command's content");
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? `${e.name}: ${e.message}` : e);
  process.exitCode = 1;
});
