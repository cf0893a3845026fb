// harnery: written by `harnery install opencode` and removed by
// `harnery uninstall opencode`. It hands the OpenCode events harnery
// records to `harnery-hook opencode <event>`: one JSON object on stdin with
// `session_id` and `hook_event_name` first, then the event objects as OpenCode
// gave them. Hand-overs run one at a time, in order, and never throw into
// OpenCode. The prompt and tool hooks wait for theirs (at most WAIT_MS), so
// that it lands before OpenCode writes the message or the call's state to its
// database; bus events are handed over in the background. Whatever is still
// queued when OpenCode exits is handed over before it goes.
import { spawn, spawnSync } from "node:child_process"

const HOOK = {hook_bin}
const ARGS = ["opencode"]
// The bus events harnery does not take: they restate, many times a turn,
// what OpenCode's own record (opencode.db) holds whole. Every other event of
// a session is handed over.
const RESTATED = new Set([
  "message.updated",
  "message.part.updated",
  "message.part.delta",
  "session.updated",
  "session.status",
  "session.diff",
])
const WAIT_MS = 1000
const queue = []
let running = false
let seq = 0

function sessionOf(name, input, event) {
  if (input && typeof input.sessionID === "string") return input.sessionID
  const p = (event && event.properties) || {}
  if (typeof p.sessionID === "string") return p.sessionID
  if (p.info && typeof p.info.sessionID === "string") return p.info.sessionID
  if (p.part && typeof p.part.sessionID === "string") return p.part.sessionID
  if (name.startsWith("session.") && p.info && typeof p.info.id === "string") return p.info.id
  return null
}

// Queue one hand-over; the promise settles when it is done (or given up).
function hand(name, fields) {
  return new Promise((resolve) => {
    try {
      const session = sessionOf(name, fields.input, fields.event)
      // Instance-wide events (plugin.added, catalog.updated, ...) belong to no session.
      if (!session) return resolve()
      const payload = JSON.stringify({
        session_id: session,
        hook_event_name: name,
        timestamp: new Date().toISOString(),
        seq: ++seq,
        pid: process.pid,
        ...fields,
      })
      queue.push({ name, payload, resolve })
      if (!running) next()
    } catch {
      resolve()
    }
  })
}

// Hand over `name` and wait for it, never longer than WAIT_MS.
function handAndWait(name, fields) {
  return Promise.race([hand(name, fields), new Promise((r) => setTimeout(r, WAIT_MS).unref?.())])
}

function next() {
  const item = queue.shift()
  if (!item) {
    running = false
    return
  }
  running = true
  let done = false
  const finish = () => {
    if (!done) {
      done = true
      item.resolve()
      next()
    }
  }
  try {
    const child = spawn(HOOK, [...ARGS, item.name], { stdio: ["pipe", "ignore", "ignore"] })
    child.on("error", finish)
    child.on("close", finish)
    child.stdin.on("error", () => {})
    child.stdin.end(item.payload)
    setTimeout(finish, 5000).unref?.()
  } catch {
    finish()
  }
}

process.on("exit", () => {
  for (const { name, payload } of queue.splice(0)) {
    try {
      spawnSync(HOOK, [...ARGS, name], { input: payload, stdio: ["pipe", "ignore", "ignore"], timeout: 2000 })
    } catch {}
  }
})

export const Harnery = async () => ({
  event: async ({ event }) => {
    if (event && typeof event.type === "string" && !RESTATED.has(event.type)) hand(event.type, { event })
  },
  "chat.message": (input, output) => handAndWait("chat.message", { input, output }),
  "tool.execute.before": (input, output) => handAndWait("tool.execute.before", { input, output }),
  "tool.execute.after": (input, output) => handAndWait("tool.execute.after", { input, output }),
})
