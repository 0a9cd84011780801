// dsh-host web console. Everything a server controls is set as text
// (textContent), never as markup; the pages' HTML is the server's,
// escaped by html/template.
"use strict";

const $ = (sel, root) => (root || document).querySelector(sel);
const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));

async function post(path, body) {
  const r = await fetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body || {}),
    credentials: "same-origin",
  });
  let v = {};
  try { v = await r.json(); } catch (e) { v = { error: r.status + " " + r.statusText }; }
  if (!r.ok && !v.error) v.error = r.status + " " + r.statusText;
  return v;
}

function say(el, text, bad) {
  if (!el) return;
  el.textContent = text;
  el.classList.toggle("bad", !!bad);
}

// The buttons that act: reload, restart, log in, trust, verify.
document.addEventListener("click", async (ev) => {
  const b = ev.target.closest("button[data-action]");
  if (!b) return;
  const out = b.parentElement.querySelector(".out") || $("#action-out");
  b.disabled = true;
  try {
    switch (b.dataset.action) {
      case "reload": {
        say(out, "reloading…");
        const v = await post("/api/reload");
        say(out, v.error ? "refused: " + v.error : "reloaded", !!v.error);
        if (!v.error) refreshLive();
        break;
      }
      case "entry": {
        say(out, "reloading…");
        const v = await post("/api/entry", { id: b.dataset.id, disabled: b.dataset.disabled === "true" });
        say(out, v.error || "done", !!v.error);
        refreshLive();
        break;
      }
      case "restart": {
        // Said outside the table, which the refresh below replaces.
        const top = $("#action-out");
        say(top, "restarting " + b.dataset.id + "…");
        const v = await post("/api/restart", { id: b.dataset.id });
        const o = (v.outcomes || [])[0];
        say(top, v.error ? "refused: " + v.error : o ? o.ID + ": " + o.Result + (o.Result === "restarted" ? "" : " — " + o.Why) : "done",
          !!v.error || (o && o.Result !== "restarted"));
        refreshLive();
        break;
      }
      case "login": {
        say(out || b, "waiting for the login in the browser…");
        const v = await post("/api/login", { server: b.dataset.server });
        alertText(b, v.error ? v.error + (v.text ? "\n" + v.text : "") : v.text, !!v.error);
        break;
      }
      case "trust": {
        const v = await post("/api/trust", { server: b.dataset.server, tool: b.dataset.tool, digest: b.dataset.digest });
        const text = v.error || v.Text || "";
        say(out, text, !!(v.error || v.Error));
        if (!v.error && !v.Error) b.closest("section").classList.add("done");
        break;
      }
      case "verify": {
        const r = await fetch("/api/verify", { credentials: "same-origin" });
        const v = await r.json();
        say($("#verify-out"), v.error || v.text, !!v.error);
        break;
      }
    }
  } catch (e) {
    say(out, String(e), true);
  } finally {
    b.disabled = false;
  }
});

// alertText shows a longer answer under the button's row.
function alertText(b, text, bad) {
  const pre = document.createElement("pre");
  pre.className = bad ? "error" : "ok";
  pre.textContent = text;
  b.closest("td, p, section").appendChild(pre);
}

// Servers: follow the host's status; the table is fetched again, at most
// once a second.
let liveTimer = null;
function refreshLive() {
  if (!$("#live") || liveTimer) return;
  liveTimer = setTimeout(async () => {
    liveTimer = null;
    const r = await fetch(location.pathname + location.search, { credentials: "same-origin" });
    if (!r.ok) return;
    const doc = new DOMParser().parseFromString(await r.text(), "text/html");
    const fresh = $("#live", doc);
    if (fresh) $("#live").replaceWith(document.adoptNode(fresh));
  }, 1000);
}
if ($("#live")) {
  new EventSource("/events/status").addEventListener("status", refreshLive);
}

// Tools: the search filters as one types.
const search = $("#tool-search");
if (search) {
  search.addEventListener("input", () => {
    const q = search.value.toLowerCase();
    for (const tr of $$("tr.tool-row")) tr.hidden = q !== "" && !tr.textContent.toLowerCase().includes(q);
  });
}

// Try it: the form's fields back into the arguments object.
function valueOf(f) {
  const kind = f.dataset.kind;
  if (kind === "object") {
    const o = {};
    const box = f.querySelector(":scope > fieldset") || f;
    for (const c of box.querySelectorAll(":scope > .f")) {
      const v = valueOf(c);
      if (v !== undefined) o[c.dataset.name] = v;
    }
    return f.dataset.name && Object.keys(o).length === 0 && !("required" in f.dataset) ? undefined : o;
  }
  if (kind === "array") {
    const items = $$(":scope > .items > .item > .f", f).map(valueOf).filter((v) => v !== undefined);
    return items.length === 0 && !("required" in f.dataset) ? undefined : items;
  }
  const input = f.querySelector("[data-value]");
  const raw = input.value;
  if (raw === "") return "required" in f.dataset && kind === "string" ? "" : undefined;
  switch (kind) {
    case "number":
    case "integer":
      return Number(raw);
    case "boolean":
      return raw === "true";
    case "enum":
    case "json":
      return JSON.parse(raw);
    default:
      return raw;
  }
}

document.addEventListener("click", (ev) => {
  const add = ev.target.closest("button[data-add]");
  if (!add) return;
  const arr = add.closest(".f-array");
  const item = document.createElement("div");
  item.className = "item";
  item.appendChild(arr.querySelector(":scope > template").content.cloneNode(true));
  const rm = document.createElement("button");
  rm.type = "button";
  rm.textContent = "remove";
  rm.addEventListener("click", () => item.remove());
  item.appendChild(rm);
  arr.querySelector(":scope > .items").appendChild(item);
});

const tryForm = $("#try");
if (tryForm) {
  tryForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const out = $("#try-result");
    out.replaceChildren();
    let args;
    try {
      args = valueOf(tryForm.querySelector(":scope > .f")) || {};
    } catch (e) {
      out.appendChild(block("error", "The arguments do not read: " + e.message));
      return;
    }
    $("#try-args").textContent = JSON.stringify(args, null, 2);
    out.appendChild(block("meta", "calling…"));
    const v = await post("/api/call", { tool: tryForm.dataset.tool, args: args });
    out.replaceChildren(...renderResult(v));
  });
}

function block(cls, text, tag) {
  const el = document.createElement(tag || "pre");
  el.className = cls;
  el.textContent = text;
  return el;
}

// renderResult shows a call's result as a model gets it: its content
// blocks (text, images by reference), then the structured value.
function renderResult(v) {
  const els = [];
  if (v.error) els.push(block("error", (v.content ? "" : "") + v.error));
  if (v.failed) els.push(block("warn", "the tool reported a failure", "p"));
  for (const c of v.content || []) {
    if (c.type === "text" && !(v.error && c.text === "Error: " + v.error)) {
      els.push(block("content text", c.text));
    } else if (c.type === "image" && c.image) {
      const i = c.image;
      els.push(block("content image", "image " + i.mediaType + " " + i.width + "×" + i.height + ", " + i.bytes + " bytes, kept as " + i.id));
    }
  }
  if (v.value !== undefined && v.value !== null) {
    const d = document.createElement("details");
    d.appendChild(block("", "structured value", "summary"));
    d.appendChild(block("value", JSON.stringify(v.value, null, 2)));
    els.push(d);
  }
  els.unshift(block("meta result-head", v.error ? "error" : "result", "h3"));
  return els;
}

// Approvals: the asks of the composition, on every page (a count and a
// notification); listed with their answers on the Approvals page.
const pending = new Set();
function showCount() {
  const badge = $("#ask-count");
  if (!badge) return;
  badge.textContent = pending.size + " waiting";
  badge.hidden = pending.size === 0;
  const none = $("#no-asks");
  if (none) none.hidden = pending.size > 0;
}

function askSection(a) {
  const t = $("#ask-template");
  const s = t.content.firstElementChild.cloneNode(true);
  s.dataset.id = a.id;
  const set = (f, text) => { const el = s.querySelector('[data-f="' + f + '"]'); if (el) el.textContent = text; };
  set("tool", a.tool);
  set("server", a.server);
  set("caller", a.caller);
  set("pid", String(a.pid));
  set("rule", a.rule);
  set("deadline", new Date(a.deadline).toLocaleTimeString());
  let args = "";
  try { args = JSON.stringify(a.arguments, null, 2); } catch (e) { args = String(a.arguments); }
  set("args", args === undefined ? "" : args);
  set("preview", a.preview || "");
  const preview = s.querySelector("details.preview");
  if (preview) preview.hidden = !a.preview;
  const choices = a.choices || [];
  for (const b of s.querySelectorAll("button[data-answer]")) {
    b.hidden = b.dataset.answer !== "deny" && !choices.includes(b.dataset.answer);
  }
  return s;
}

function onAsk(ev) {
  const e = JSON.parse(ev.data);
  const list = $("#asks");
  if (e.ask) {
    const known = pending.has(e.ask.id);
    pending.add(e.ask.id);
    if (list && !list.querySelector('[data-id="' + CSS.escape(e.ask.id) + '"]')) list.appendChild(askSection(e.ask));
    if (!known && e.fresh && "Notification" in window && Notification.permission === "granted") {
      new Notification("dsh-host: " + e.ask.caller + " asks to call " + e.ask.tool, { body: "on " + e.ask.server, tag: e.ask.id });
    }
  }
  for (const id of [e.answered, e.expired]) {
    if (!id) continue;
    pending.delete(id);
    const s = list && list.querySelector('[data-id="' + CSS.escape(id) + '"]');
    if (s) s.remove();
  }
  showCount();
}

if ("asks" in document.body.dataset && $("#ask-count")) {
  for (const s of $$("#asks section.ask")) pending.add(s.dataset.id);
  const es = new EventSource("/events/asks");
  es.addEventListener("ask", onAsk);
  es.onerror = () => { if (es.readyState === EventSource.CLOSED) showCount(); };
  showCount();
}

document.addEventListener("click", async (ev) => {
  const b = ev.target.closest("button[data-answer]");
  if (!b) return;
  const s = b.closest("section.ask");
  const v = await post("/api/answer", { id: s.dataset.id, answer: b.dataset.answer });
  if (v.error) {
    say(s.querySelector(".out"), v.error, true);
    return;
  }
  pending.delete(s.dataset.id);
  s.remove();
  showCount();
});

const notify = $("#notify");
if (notify && "Notification" in window && Notification.permission === "default") {
  notify.hidden = false;
  notify.addEventListener("click", async () => {
    await Notification.requestPermission();
    notify.hidden = Notification.permission !== "default";
  });
}

// Audit: the trail, live, newest first; the page keeps the last 500.
const rows = $("#audit-rows");
if (rows) {
  const q = new URLSearchParams(location.search);
  const es = new EventSource("/events/audit?" + q.toString());
  const state = $("#audit-state");
  say(state, "following…");
  es.addEventListener("call", (ev) => {
    const r = JSON.parse(ev.data);
    const tr = document.createElement("tr");
    tr.dataset.decision = r.decision || "";
    const cell = (text, cls) => { const td = block(cls || "", text, "td"); tr.appendChild(td); };
    cell(new Date(r.time).toLocaleString());
    cell(r.caller);
    cell(r.tool + (r.server ? " (" + r.server + ")" : ""));
    cell(r.args ? JSON.stringify(r.args) : "", "args");
    cell((r.decision || "") + (r.rule ? " · " + r.rule : "") + (r.answer ? " · " + r.answer : ""));
    cell(r.outcome + (r.error ? ": " + r.error : ""));
    cell(r.ms.toFixed(1), "num");
    rows.prepend(tr);
    while (rows.children.length > 500) rows.lastElementChild.remove();
  });
  es.addEventListener("failure", (ev) => say(state, JSON.parse(ev.data).error, true));
}
