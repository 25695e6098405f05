// Browser tests of the web console and the API reference: the gateway binary in development
// mode (SQLite, a free port) with the four example hospitals' node agents (the node binary),
// driven through the system's headless Chromium by playwright-core. One scripted flow per
// role, a screenshot of every page visited, an axe-core scan of each (no serious or critical
// violation), and no request to any origin but the gateway's.
//
// The node agents start only once the researcher's study page is open, so the test sees the
// rounds arrive on that page from the study's server-sent events, without a reload or a poll.
//
// Environment: EHDS_GATEWAY_BIN (default target/debug/ehds-gateway), EHDS_NODE_BIN (default
// target/debug/ehds-node), CHROMIUM_PATH (default /usr/bin/chromium), SCREENSHOT_DIR (default
// tests/browser/screenshots).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { mkdtempSync, mkdirSync, readFileSync, openSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "..", "..");
const require = createRequire(import.meta.url);
const axeSource = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");

const bin = process.env.EHDS_GATEWAY_BIN || join(repo, "target", "debug", "ehds-gateway");
const nodeBin = process.env.EHDS_NODE_BIN || join(repo, "target", "debug", "ehds-node");
const chromiumPath = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const shots = process.env.SCREENSHOT_DIR || join(here, "screenshots");
const hospitals = [
  ["cleveland", "DE"],
  ["hungarian", "HU"],
  ["switzerland", "AT"],
  ["va", "NL"],
];

let gateway;
let base;
let browser;
const processes = [];
const work = mkdtempSync(join(tmpdir(), "ehds-browser-"));
// Every request any page made, and every CSP violation any page reported.
const requested = [];
const violations = [];
const scans = [];

function freePort() {
  return new Promise((ok, fail) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => ok(port));
    });
    server.on("error", fail);
  });
}

function start(args, log, env, program = bin) {
  const out = openSync(join(work, log), "a");
  const child = spawn(program, args, { cwd: repo, env, stdio: ["ignore", out, out] });
  processes.push(child);
  return child;
}

function tail(log, lines = 40) {
  try {
    return readFileSync(join(work, log), "utf8").split("\n").slice(-lines).join("\n");
  } catch {
    return "";
  }
}

before(async () => {
  assert.ok(existsSync(bin), `no gateway binary at ${bin} (build it, or set EHDS_GATEWAY_BIN)`);
  assert.ok(existsSync(nodeBin), `no node binary at ${nodeBin} (build it, or set EHDS_NODE_BIN)`);
  assert.ok(existsSync(chromiumPath), `no Chromium at ${chromiumPath} (apt-get install chromium)`);
  mkdirSync(shots, { recursive: true });
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  const data = join(work, "data");
  mkdirSync(data);
  const env = {
    ...process.env,
    EHDS_DATABASE_URL: `sqlite://${join(data, "gateway.db")}?mode=rwc`,
    EHDS_DATA_DIR: data,
    EHDS_LISTEN: `127.0.0.1:${port}`,
    EHDS_FEDERATION__TICK_MILLIS: "100",
    RUST_LOG: "info",
  };
  gateway = start(["serve", "--dev"], "gateway.log", env);
  const until = Date.now() + 60_000;
  for (;;) {
    assert.equal(gateway.exitCode, null, `the gateway exited:\n${tail("gateway.log")}`);
    try {
      if ((await fetch(`${base}/readyz`)).status === 200) break;
    } catch {
      // not listening yet
    }
    assert.ok(Date.now() < until, `the gateway did not become ready:\n${tail("gateway.log")}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  nodeEnv = { env, data };
  browser = await chromium.launch({ executablePath: chromiumPath, headless: true });
});

// The four hospitals' node agents; started once the researcher watches the study page, so
// that every round is seen to arrive there.
let nodeEnv;
function startNodes() {
  for (const [org] of hospitals) {
    start(
      [
        "run", "--gateway", base, "--org", org,
        "--fhir", join(repo, "examples", "federation", `${org}.json`),
        "--state-dir", join(work, "nodes", org),
        "--dev-key-dir", nodeEnv.data,
        "--poll-wait", "5",
      ],
      `node-${org}.log`,
      nodeEnv.env,
      nodeBin,
    );
  }
}

after(async () => {
  await browser?.close();
  for (const p of processes) p.kill("SIGTERM");
  // The summary of what was checked, for the CI log.
  console.log(`axe-core scans: ${scans.length}; requests checked: ${requested.length}; screenshots in ${shots}`);
});

async function newPage() {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  const page = await context.newPage();
  page.on("request", (r) => requested.push(r.url()));
  page.on("console", (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(m.text());
  });
  page.on("pageerror", (e) => violations.push(`page error: ${e.message}`));
  return page;
}

// axe-core is evaluated through the DevTools protocol, which the page's CSP does not govern.
async function checkPage(page, name) {
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
  await page.evaluate(axeSource);
  const result = await page.evaluate(() =>
    // eslint-disable-next-line no-undef
    axe.run(document, { resultTypes: ["violations"] }),
  );
  const serious = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  scans.push(name);
  assert.deepEqual(
    serious.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join(", ")})`),
    [],
    `accessibility violations on ${name}`,
  );
}

async function signIn(page, role) {
  await page.goto(`${base}/console/login`);
  assert.match(page.url(), /\/console\/login\/dev$/);
  await checkPage(page, `login-${role}`);
  await page.check(`input[name=role][value=${role}]`);
  await Promise.all([page.waitForURL(`${base}/console/`), page.click("button[type=submit]")]);
}

function day(offset) {
  return new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
}

let applicationUrl;
let permitUrl;

test("researcher applies for a data permit", async () => {
  const page = await newPage();
  await signIn(page, "researcher");
  await checkPage(page, "researcher-home");
  await page.goto(`${base}/console/applications/new`);
  await checkPage(page, "researcher-apply-form");
  // First with a negative budget: the API's message is shown at the field.
  await page.fill("#f-title", "Federated heart-disease risk model");
  await page.check("input[name=purposes][value=scientific_research]");
  await page.check("input[name=research_flags][value=algorithm_training]");
  await page.check("input[name=categories][value=ehr_data]");
  await page.fill("#f-data_holders", hospitals.map((h) => h[0]).join(", "));
  await page.fill("#f-member_states", hospitals.map((h) => h[1]).join(", "));
  await page.fill("#f-requested_period-start", day(0));
  await page.fill("#f-requested_period-end", day(365));
  await page.fill("#f-privacy_budget-epsilon", "-1");
  await page.fill("#f-privacy_budget-delta", "0.00001");
  await page.fill("#f-privacy_budget-unit", "data_holder");
  await page.fill("#f-justification", "Train a risk model across four hospitals without moving any record.");
  await page.check("input[name=declares_no_prohibited_use]");
  await page.click("form.stack button[type=submit]");
  await page.waitForSelector("#f-privacy_budget-epsilon-error");
  await checkPage(page, "researcher-apply-errors");
  // The form comes back as it was sent; only the budget needs correcting.
  await page.fill("#f-privacy_budget-epsilon", "10");
  await Promise.all([
    page.waitForURL(/\/console\/applications\/[0-9a-f-]+$/),
    page.click("form.stack button[type=submit]"),
  ]);
  applicationUrl = page.url();
  assert.match(await page.textContent("main"), /submitted/);
  await checkPage(page, "researcher-application");
  await page.context().close();
});

test("officer decides the application, then suspends and reinstates the permit", async () => {
  assert.ok(applicationUrl, "the researcher's flow ran first");
  const page = await newPage();
  await signIn(page, "hdab_officer");
  await checkPage(page, "officer-home");
  await page.goto(`${base}/console/applications`);
  assert.match(await page.textContent("table"), /Federated heart-disease risk model/);
  assert.match(await page.textContent("table"), /completeness check pending/);
  await checkPage(page, "officer-queue");
  await page.goto(applicationUrl);
  await checkPage(page, "officer-application");
  await page.check("input[name=decision][value=approve]");
  await page.fill("#f-conditions", "Publish the model card with the results.");
  await Promise.all([
    page.waitForURL(/\/console\/permits\/[^/]+$/),
    page.click("form[action$=decision] button[type=submit]"),
  ]);
  permitUrl = page.url();
  assert.equal((await page.textContent("#permit-status")).trim(), "active");
  await checkPage(page, "officer-permit");

  await page.fill("form[action$=suspend] input[name=reason]", "Art. 63 inquiry into a complaint");
  await Promise.all([page.waitForLoadState("load"), page.click("form[action$=suspend] button")]);
  assert.equal((await page.textContent("#permit-status")).trim(), "suspended");
  await checkPage(page, "officer-permit-suspended");
  await Promise.all([page.waitForLoadState("load"), page.click("form[action$=reinstate] button")]);
  assert.equal((await page.textContent("#permit-status")).trim(), "active");
  assert.match(await page.textContent("main"), /Versions of the terms/);

  // Amend the terms: version 2 is listed with its reason, the budget changed.
  await page.fill("#f-amend-reason", "Budget review before the first study");
  await page.fill("#f-amend-conditions", "Publish the model card and the evaluation.");
  await page.fill("#f-amend-epsilon", "9");
  await Promise.all([page.waitForLoadState("load"), page.click("form[action$=amend] button")]);
  assert.equal(page.url(), permitUrl);
  const versions = await page.$$eval("table#versions tbody tr", (rows) =>
    rows.map((r) => Array.from(r.cells, (c) => c.textContent.trim())),
  );
  assert.equal(versions.length, 2, JSON.stringify(versions));
  assert.equal(versions[1][0], "2");
  assert.equal(versions[1][3], "Budget review before the first study");
  assert.match(versions[1][4], /^9(\.0)?$/);
  assert.match(await page.textContent("dl.facts"), /Publish the model card and the evaluation\./);
  await checkPage(page, "officer-permit-amended");
  await page.context().close();
});

test("researcher submits a study and follows its progress to the released model", async () => {
  assert.ok(permitUrl, "the officer's flow ran first");
  const page = await newPage();
  await signIn(page, "researcher");
  await page.goto(`${base}/console/studies/new`);
  await checkPage(page, "researcher-study-form");
  const permitId = permitUrl.split("/").pop();
  await page.fill("#f-title", "Coronary artery disease risk, four hospitals");
  await page.selectOption("#f-permit_id", permitId);
  await page.fill("#f-data_holders", hospitals.map((h) => h[0]).join(", "));
  await page.fill(
    "#f-feature_spec",
    readFileSync(join(repo, "examples", "federation", "heart_disease.features.json"), "utf8"),
  );
  await page.fill("#f-rounds", "2");
  await page.fill("#f-min_sites", "3");
  await page.fill("#f-dp-target_epsilon", "2.0");
  const eventsRequest = page.waitForRequest((r) => /^\/console\/studies\/[0-9a-f-]+\/events$/.test(new URL(r.url()).pathname));
  await Promise.all([
    page.waitForURL(/\/console\/studies\/[0-9a-f-]+$/),
    page.click("form.stack button[type=submit]"),
  ]);
  const studyUrl = page.url();
  const studyPath = new URL(studyUrl).pathname;
  assert.match(await page.textContent("#study-status"), /pending|running/);
  await checkPage(page, "researcher-study-started");
  // From here on the page must neither reload nor poll: what changes comes from the events.
  const polls = [];
  let navigations = 0;
  page.on("request", (r) => {
    if (new URL(r.url()).pathname === `${studyPath}/progress`) polls.push(r.url());
  });
  page.on("framenavigated", (f) => {
    if (f === page.mainFrame()) navigations += 1;
  });
  // The page subscribed to the study's events through the console.
  const subscribed = await (await eventsRequest).response();
  assert.equal(new URL(subscribed.url()).pathname, `${studyPath}/events`);
  assert.equal(subscribed.status(), 200);
  assert.match(subscribed.headers()["content-type"], /^text\/event-stream/);
  startNodes();
  // The first aggregated round appears in the table and the charts.
  await page.waitForFunction(
    () =>
      Array.from(document.querySelectorAll("#progress table.rounds tbody tr"), (tr) => tr.cells[1]?.textContent).includes(
        "aggregated",
      ),
    null,
    { timeout: 120_000 },
  );
  await page.waitForSelector(".plot canvas");
  assert.match(await page.textContent("#progress table.rounds"), /cleveland/);
  await page.waitForFunction(
    () => document.querySelector("#study-status")?.textContent.trim() === "completed",
    null,
    { timeout: 120_000 },
  );
  assert.equal(page.url(), studyUrl);
  assert.equal(navigations, 0, "the study page was not reloaded");
  assert.deepEqual(polls, [], "the progress came from the events, not from polling");
  assert.match(await page.textContent("#study-epsilon"), /^[0-9.]+$/);
  assert.ok(Number(await page.textContent("#study-epsilon")) > 0, "epsilon was spent");
  const aggregated = await page.$$eval("#progress table.rounds tbody tr", (rows) =>
    new Set(rows.filter((r) => r.cells[1]?.textContent === "aggregated").map((r) => r.cells[0].textContent)).size,
  );
  assert.equal(aggregated, 2, "both rounds are in the table");
  await checkPage(page, "researcher-study-completed");
  // A reload shows the same rounds and status, rendered by the server.
  const shown = () =>
    page.$$eval("#progress table.rounds tbody tr, #progress p[role=status]", (rows) =>
      rows.map((r) => (r.cells ? Array.from(r.cells, (c) => c.textContent.trim()) : r.textContent.replace(/\s+/g, " ").trim())),
    );
  const live = await shown();
  await page.reload();
  assert.deepEqual(await shown(), live);
  const [download] = await Promise.all([
    page.waitForEvent("download"),
    page.click("text=Download the released model"),
  ]);
  assert.equal(await download.failure(), null);
  await page.context().close();
});

test("officer extends the permit, then revokes it", async () => {
  assert.ok(permitUrl, "the officer's flow ran first");
  const page = await newPage();
  await signIn(page, "hdab_officer");
  await page.goto(permitUrl);
  await page.fill("#f-extend-expires", day(700));
  await page.fill("#f-extend-reason", "Follow-up of the cohort");
  await Promise.all([page.waitForLoadState("load"), page.click("form[action$=extend] button")]);
  assert.match(await page.textContent("dl.facts"), new RegExp(`to ${day(700)} \\(extended `));
  // Revoking needs a reason: the API's message is shown and nothing changes.
  await Promise.all([page.waitForLoadState("load"), page.click("form[action$=revoke] button")]);
  assert.match(await page.textContent(".problem"), /reason/);
  assert.equal((await page.textContent("#permit-status")).trim(), "active");
  await checkPage(page, "officer-revoke-refused");
  await page.fill("#f-revoke-reason", "Art. 63: the conditions were breached");
  await Promise.all([page.waitForLoadState("load"), page.click("form[action$=revoke] button")]);
  assert.equal((await page.textContent("#permit-status")).trim(), "revoked");
  assert.match(await page.textContent("dl.facts"), /Art\. 63: the conditions were breached/);
  assert.equal(await page.$("form[action$=suspend], form[action$=amend], form[action$=revoke]"), null);
  await checkPage(page, "officer-permit-revoked");
  await page.context().close();
});

test("auditor filters the trail, verifies the chain and exports it", async () => {
  const page = await newPage();
  await signIn(page, "auditor");
  await page.goto(`${base}/console/audit`);
  await checkPage(page, "auditor-trail");
  await page.fill("#f-actor", "officer-1");
  await Promise.all([page.waitForLoadState("load"), page.click("form.filters button")]);
  assert.match(page.url(), /actor=officer-1/);
  const rows = await page.$$eval("table tbody tr td:nth-child(3)", (cells) => cells.map((c) => c.textContent.trim()));
  assert.ok(rows.length >= 3, `the officer's entries are listed: ${rows}`);
  assert.ok(rows.every((r) => r === "officer-1"), `only the officer's entries: ${rows}`);
  await page.click("text=Verify the hash chain");
  await page.waitForSelector("#verify-result .ok");
  assert.match(await page.textContent("#verify-result"), /intact/);
  await checkPage(page, "auditor-verified");
  // Each export link, fetched with the page's session (the filters apply).
  for (const format of ["json", "jsonl", "csv", "fhir"]) {
    const href = await page.getAttribute(`a[href^="/console/audit/export?format=${format}"]`, "href");
    assert.match(href, /actor=officer-1/);
    const response = await page.context().request.get(`${base}${href}`);
    assert.equal(response.status(), 200, format);
    assert.match(response.headers()["content-disposition"], /attachment/, format);
    const body = await response.text();
    assert.match(body, /officer-1/, format);
  }
  await page.goto(`${base}/console/audit/records`);
  assert.match(await page.textContent("main"), /Permit/);
  await checkPage(page, "auditor-records");
  await page.context().close();
});

test("the API reference at /docs loads without any external request", async () => {
  const page = await newPage();
  const before = requested.length;
  await page.goto(`${base}/docs/`);
  await page.waitForSelector(".swagger-ui .info .title", { timeout: 30_000 });
  await page.waitForLoadState("networkidle");
  await page.screenshot({ path: join(shots, "docs.png"), fullPage: false });
  assert.ok(requested.length > before, "the reference loaded its assets");
  await page.context().close();
});

test("no page asked another origin for anything, and none broke its CSP", () => {
  const origin = new URL(base).origin;
  const foreign = requested.filter((u) => !u.startsWith("data:") && !u.startsWith("blob:") && new URL(u).origin !== origin);
  assert.deepEqual(foreign, []);
  assert.deepEqual(violations, []);
  assert.ok(scans.length >= 15, `every page was scanned (${scans.length})`);
});
