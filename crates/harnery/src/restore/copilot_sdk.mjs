// The Copilot SDK resume of harnery (`harnery restore --transport sdk`): one
// session resumed through @github/copilot-sdk (JSON-RPC to the Copilot
// runtime), one prompt sent, the turn waited for (`session.idle`), the
// reply of the assistant printed on stdout and a summary on stderr.
//
// Its one argument is a JSON request; nothing of it is ever part of this
// source: {"session_id", "prompt"?, "model"?, "allow_all_tools", "sdk_dir"?,
// "check"?, "timeout_secs"?}. With "timeout_secs", a turn that has not
// ended by then is aborted and counts as failed. Without a prompt, the
// prompt is standard input. The working directory is that of the session. The model provider (BYOK) comes from the
// COPILOT_PROVIDER_* variables of the Copilot CLI, the model from COPILOT_MODEL, and the
// runtime from COPILOT_CLI_PATH (read by the SDK itself; else its own).
//
// Exit: 0 the turn ended; 1 Copilot refused the resume or failed the turn;
// 2 it could not be tried (a bad request, no SDK, no prompt, no runtime).
import { createRequire } from "node:module";
import { existsSync, readFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import path from "node:path";

const say = (line) => process.stderr.write(`harnery: ${line}\n`);
const stop = (code, line) => {
  say(line);
  process.exit(code);
};

let request;
try {
  request = JSON.parse(process.argv[1] ?? "");
} catch (e) {
  stop(2, `the request (the one argument) is not JSON: ${e.message}`);
}
if (typeof request?.session_id !== "string" || request.session_id === "") {
  stop(2, "the request names no session_id");
}
// A timer holds at most 2^31 - 1 ms (node fires a longer one at once).
const limit = request.timeout_secs;
if (limit !== undefined && !(Number.isInteger(limit) && limit > 0 && limit <= 2000000)) {
  stop(2, `the request's timeout_secs is not a whole number of seconds from 1 to 2000000: ${JSON.stringify(limit)}`);
}

// Where the SDK may be: the directory given (its node_modules, or itself
// when it is one); else where node itself resolves a package from the
// working directory, then (asked only when those fail) the global npm root.
function globalRoot() {
  try {
    const root = execFileSync("npm", ["root", "-g"], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
    return root ? [root] : [];
  } catch {
    return [];
  }
}

function findSdk() {
  const looked = [];
  const lookIn = (places) => {
    for (const dir of places) {
      looked.push(dir);
      const pkg = path.join(dir, "@github", "copilot-sdk");
      if (existsSync(path.join(pkg, "package.json"))) return pkg;
    }
  };
  const here = createRequire(path.join(process.cwd(), "harnery-sdk-resume.cjs"));
  const found = request.sdk_dir
    ? lookIn([path.join(request.sdk_dir, "node_modules"), request.sdk_dir])
    : lookIn(here.resolve.paths("@github/copilot-sdk") ?? []) ?? lookIn(globalRoot());
  if (found) return found;
  const how = request.sdk_dir
    ? "in the directory given (--sdk or HARNERY_COPILOT_SDK)"
    : `from the working directory ${process.cwd()}, then the global npm root (npm root -g)`;
  stop(
    2,
    `@github/copilot-sdk not found ${how}; looked in: ${looked.join(", ")}. ` +
      "Install it (npm install @github/copilot-sdk) or name the directory " +
      "holding its node_modules with --sdk DIR or HARNERY_COPILOT_SDK",
  );
}

// "Name: Value" pairs, a newline (or a written \n) between them.
function headers(text) {
  const out = {};
  for (const line of text.split(/\n|\\n/)) {
    const at = line.indexOf(":");
    if (at > 0) out[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return out;
}

// The BYOK provider, from the variables the Copilot CLI reads itself;
// none when COPILOT_PROVIDER_BASE_URL is unset (the models of Copilot itself).
function provider() {
  const env = process.env;
  if (!env.COPILOT_PROVIDER_BASE_URL) return undefined;
  const p = { baseUrl: env.COPILOT_PROVIDER_BASE_URL };
  const text = {
    type: "TYPE",
    apiKey: "API_KEY",
    bearerToken: "BEARER_TOKEN",
    wireApi: "WIRE_API",
    transport: "TRANSPORT",
    modelId: "MODEL_ID",
    wireModel: "WIRE_MODEL",
  };
  for (const [key, name] of Object.entries(text)) {
    const value = env[`COPILOT_PROVIDER_${name}`];
    if (value) p[key] = value;
  }
  for (const [key, name] of [
    ["maxPromptTokens", "MAX_PROMPT_TOKENS"],
    ["maxOutputTokens", "MAX_OUTPUT_TOKENS"],
  ]) {
    const value = env[`COPILOT_PROVIDER_${name}`];
    if (value) p[key] = Number(value);
  }
  if (env.COPILOT_PROVIDER_AZURE_API_VERSION) {
    p.azure = { apiVersion: env.COPILOT_PROVIDER_AZURE_API_VERSION };
  }
  if (env.COPILOT_PROVIDER_HEADERS) p.headers = headers(env.COPILOT_PROVIDER_HEADERS);
  if (env.COPILOT_PROVIDER_API_KEY_COMMAND && !p.apiKey) {
    say("COPILOT_PROVIDER_API_KEY_COMMAND is not passed to the SDK; set COPILOT_PROVIDER_API_KEY");
  }
  return p;
}

async function promptText() {
  if (typeof request.prompt === "string") return request.prompt;
  if (process.stdin.isTTY) say("the prompt, from standard input (end it with Ctrl-D):");
  let text = "";
  for await (const chunk of process.stdin) text += chunk;
  return text;
}

const pkg = findSdk();
const version = JSON.parse(readFileSync(path.join(pkg, "package.json"), "utf8")).version;
if (request.check) {
  process.stdout.write(`${JSON.stringify({ sdk: pkg, version })}\n`);
  process.exit(0);
}
const sdk = createRequire(path.join(pkg, "package.json"))(pkg);
if (typeof sdk.CopilotClient !== "function") stop(2, `${pkg} exports no CopilotClient`);
const prompt = await promptText();
if (!prompt.trim()) stop(2, "no prompt: give one after -- (-p PROMPT) or on standard input");

const id = request.session_id;
const cwd = process.cwd();
const client = new sdk.CopilotClient({ workingDirectory: cwd, logLevel: "error" });
try {
  await client.start();
} catch (e) {
  stop(2, `the Copilot runtime did not start: ${e.message}`);
}
let session;
try {
  session = await client.resumeSession(id, {
    model: request.model ?? (process.env.COPILOT_MODEL || undefined),
    provider: provider(),
    workingDirectory: cwd,
    onPermissionRequest: request.allow_all_tools
      ? sdk.approveAll
      : () => ({ kind: "user-not-available" }),
  });
} catch (e) {
  say(`Copilot refused to resume session ${id}: ${e.message}`);
  await client.stop().catch(() => {});
  process.exit(1);
}
const tally = { messages: 0, tools: 0, errors: [] };
const idle = new Promise((resolve) =>
  session.on((event) => {
    const data = event.data ?? {};
    if (event.type === "assistant.message" && data.content) {
      tally.messages += 1;
      process.stdout.write(`${data.content}\n`);
    }
    if (event.type === "tool.execution_start") tally.tools += 1;
    if (event.type === "session.error") tally.errors.push(data.message ?? JSON.stringify(data));
    if (event.type === "session.idle") resolve();
  }),
);
// Resolves "late" once the turn's time is up (never without a limit).
const late = new Promise((resolve) => {
  if (limit !== undefined) setTimeout(() => resolve("late"), limit * 1000);
});
try {
  await session.send({ prompt });
  if ((await Promise.race([idle, late])) === "late") {
    tally.errors.push(`the turn did not end within ${limit} s; it was aborted`);
    await session.abort().catch((e) => tally.errors.push(`the abort failed: ${e.message}`));
  }
} catch (e) {
  tally.errors.push(e.message);
}
const ended = tally.errors.length === 0;
const count = (n, what) => `${n} ${what}${n === 1 ? "" : "s"}`;
say(
  `Copilot session ${id} resumed through @github/copilot-sdk ${version}: ` +
    (ended
      ? `the turn ended (${count(tally.messages, "assistant message")}, ${count(tally.tools, "tool call")})`
      : `the turn failed: ${tally.errors.join("; ")}`),
);
await session.disconnect().catch(() => {});
await client.stop().catch(() => {});
process.exit(ended ? 0 : 1);
