// End-to-end: the built .vsix in a real VS Code (code-server), driven by headless Chromium.
//
//   CODE_SERVER=<code-server bin> VSIX=<paperlens-0.1.0.vsix> PAPERLENS_PYTHON=<python with paperlens>
//   SHOTS=<folder for screenshots> [WORK=<scratch folder>] [CHROMIUM=/usr/bin/chromium] node e2e/run.js
//
// Three sessions, each a fresh VS Code profile with the .vsix installed and a copy of the example
// workspace and paper:
//   walk-through   what a user does: the divergence in the Problems panel, the hover with the
//                  paper's quote, the equation image in a hover, the quick fix, the paper view
//                  (palette and code lens) at the equation's source, check / readiness report /
//                  open questions, a smoke run in the status bar, the repository scaffolded from
//                  the paper (reviewed in the Refactor Preview, applied, saved), then the PDF as
//                  the paper: its page in the paper view with the equation's box;
//   restricted     an untrusted folder: still checked, no smoke run offered;
//   not-installed  a Python without paperlens: the message with the command to run.
// Each step leaves a screenshot in SHOTS; SHOTS/results.json says what passed, what was seen and
// how long each step took. Exit status 0 when every step passed.

"use strict";

const { spawn, execFileSync } = require("child_process");
const fs = require("fs");
const http = require("http");
const net = require("net");
const os = require("os");
const path = require("path");
const { chromium } = require("playwright-core");

const REPO = path.resolve(__dirname, "..", "..");
const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set (see the header of e2e/run.js)`);
  return value;
};
const CODE_SERVER = env("CODE_SERVER");
const VSIX = env("VSIX");
const PYTHON = env("PAPERLENS_PYTHON");
const SHOTS = env("SHOTS");
const WORK = process.env.WORK || fs.mkdtempSync(path.join(os.tmpdir(), "paperlens-e2e-"));
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const T0 = Date.now();
const elapsed = () => (Date.now() - T0) / 1000;
const log = (...args) => console.log(`[${elapsed().toFixed(1)}s]`, ...args);
const results = { steps: [], timings: {}, work: WORK, shots: SHOTS };

fs.mkdirSync(SHOTS, { recursive: true });

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function waitForHttp(url, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      http
        .get(url, (res) => {
          res.resume();
          resolve();
        })
        .on("error", () => (Date.now() > deadline ? reject(new Error(`${url} did not answer`)) : setTimeout(attempt, 200)));
    };
    attempt();
  });
}

/** The example workspace and paper, copied side by side (the workspace's pyproject says ../paper). */
function prepareWorkspace(parent) {
  const root = path.join(parent, "ws");
  fs.rmSync(root, { recursive: true, force: true });
  fs.cpSync(path.join(REPO, "examples", "workspace"), path.join(root, "workspace"), { recursive: true });
  fs.cpSync(path.join(REPO, "examples", "paper"), path.join(root, "paper"), { recursive: true });
  return { workspace: path.join(root, "workspace"), paper: path.join(root, "paper") };
}

/** The line (0-based) of the equation numbered `number` in the paper's source, as paperlens reads it. */
function equationLine(paper, number) {
  const out = execFileSync(PYTHON, ["-m", "paperlens.pipeline.cli", "index", paper, "--format", "json", "--no-cache"], { encoding: "utf8", maxBuffer: 64 << 20 });
  const spec = JSON.parse(out);
  const equation = spec.equations.find((e) => e.number === number);
  if (!equation) throw new Error(`the paper has no Eq. (${number})`);
  return { file: equation.location.file, line: equation.location.line };
}

function userSettings(dataDir, extra) {
  const settings = {
    "paperlens.interpreter": PYTHON,
    "paperlens.smokeOnSave": false, // no Docker needed here
    // "Run the smoke test" by hand: a trivial command, on this machine (unisolated, an opt-in).
    "paperlens.sandbox.mode": "local",
    "paperlens.sandbox.command": [PYTHON, "-c", "print('smoke ok')"],
    "paperlens.trace.server": "off",
    "security.workspace.trust.enabled": false,
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": false,
    "workbench.enableExperiments": false,
    "workbench.welcomePage.walkthroughs.openOnInstall": false,
    "telemetry.telemetryLevel": "off",
    "update.mode": "none",
    "extensions.autoCheckUpdates": false,
    "extensions.autoUpdate": false,
    "extensions.ignoreRecommendations": true,
    "chat.commandCenter.enabled": false,
    "editor.minimap.enabled": false,
    "editor.hover.delay": 250,
    "editor.codeLens": true,
    "files.autoSave": "off",
    "workbench.editor.enablePreview": false,
    ...extra,
  };
  fs.mkdirSync(path.join(dataDir, "User"), { recursive: true });
  fs.writeFileSync(path.join(dataDir, "User", "settings.json"), JSON.stringify(settings, null, 2));
}

// -- in the page --------------------------------------------------------------------------------

/** The screen box of `text` on the first editor line that contains `lineText` (Monaco renders
 * spaces as no-break spaces), in the editor whose tab is `file`, or undefined. */
async function textBox(page, lineText, text) {
  return page.evaluate(
    ({ lineText, text }) => {
      const norm = (s) => s.replace(/\u00a0/g, " ");
      for (const line of document.querySelectorAll(".editor-group-container.active .monaco-editor .view-line")) {
        const content = norm(line.textContent || "");
        if (!content.includes(lineText)) continue;
        const at = content.indexOf(text, content.indexOf(lineText));
        if (at < 0) continue;
        const walker = document.createTreeWalker(line, NodeFilter.SHOW_TEXT);
        let offset = 0;
        const range = document.createRange();
        let started = false;
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
          const length = node.textContent.length;
          if (!started && at < offset + length) {
            range.setStart(node, at - offset);
            started = true;
          }
          if (started && at + text.length <= offset + length) {
            range.setEnd(node, at + text.length - offset);
            const r = range.getBoundingClientRect();
            return { x: r.x, y: r.y, width: r.width, height: r.height };
          }
          offset += length;
        }
      }
      return undefined;
    },
    { lineText, text },
  );
}

async function waitForText(page, lineText, text, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const box = await textBox(page, lineText, text);
    if (box) return box;
    if (Date.now() > deadline) throw new Error(`"${lineText}" is not on screen`);
    await page.waitForTimeout(200);
  }
}

/** Hover `text` on the line holding `lineText` until a hover containing `expect` shows; the hover. */
async function hoverOver(page, lineText, text, expect, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const box = await waitForText(page, lineText, text);
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2, { steps: 2 });
    const hover = page.locator(".monaco-hover:not(.hidden)", { hasText: expect }).first();
    try {
      await hover.waitFor({ timeout: 3000 });
      return hover;
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`no hover with "${expect}" over "${text}"`);
      await page.mouse.move(5, 5); // away, then back: ask again (the server may still be reading)
      await page.waitForTimeout(500);
    }
  }
}

async function openFromExplorer(page, name) {
  const item = page.locator(".explorer-folders-view .monaco-list-row", { hasText: name }).first();
  await item.waitFor({ timeout: 30000 });
  await item.click();
  await page.locator(".tabs-container .tab.active", { hasText: name }).first().waitFor({ timeout: 30000 });
}

async function problemRows(page) {
  return page.locator(".markers-panel .monaco-list-row").allInnerTexts();
}

async function images(locator) {
  return locator.locator("img").evaluateAll((els) =>
    els.map((e) => ({ alt: e.alt, src: (e.getAttribute("src") || "").slice(0, 40), complete: e.complete, naturalWidth: e.naturalWidth, naturalHeight: e.naturalHeight })),
  );
}

async function waitForImage(locator, timeoutMs = 15000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await images(locator);
    if (found.some((i) => i.naturalWidth > 0)) return found;
    if (Date.now() > deadline) throw new Error(`no image rendered: ${JSON.stringify(found)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

// -- the walk-through ---------------------------------------------------------------------------

async function step(page, name, body) {
  const started = Date.now();
  log(`step: ${name}`);
  try {
    const detail = await body();
    const seconds = (Date.now() - started) / 1000;
    results.steps.push({ name, ok: true, seconds, detail });
    log(`  ok (${seconds.toFixed(1)} s)`, JSON.stringify(detail));
  } catch (err) {
    const seconds = (Date.now() - started) / 1000;
    results.steps.push({ name, ok: false, seconds, error: String(err && err.stack ? err.stack : err) });
    log(`  FAILED (${seconds.toFixed(1)} s): ${err}`);
    await page.screenshot({ path: path.join(SHOTS, `failed-${name}.png`) }).catch(() => undefined);
    throw err;
  }
}

async function walkThrough(page, where) {
  const shot = (file) => page.screenshot({ path: path.join(SHOTS, file) });

  await step(page, "workbench", async () => {
    await page.waitForSelector(".monaco-workbench", { timeout: 60000 });
    await page.locator(".explorer-folders-view .monaco-list-row", { hasText: "train.py" }).first().waitFor({ timeout: 60000 });
    return { seconds_since_start: elapsed() };
  });

  await step(page, "divergence-in-problems", async () => {
    await openFromExplorer(page, "train.py");
    await page.waitForSelector(".monaco-editor .squiggly-warning, .monaco-editor .squiggly-error", { timeout: 90000 });
    await page.keyboard.press("Control+Shift+M");
    const row = page.locator(".markers-panel .monaco-list-row", { hasText: "weight_decay = 5e-4" }).first();
    await row.waitFor({ timeout: 30000 });
    const text = (await row.innerText()).replace(/\s+/g, " ");
    if (!text.includes("0.05")) throw new Error(`the Problems row does not give the paper's value: ${text}`);
    const status = await page.locator(".statusbar-item", { hasText: "paperlens" }).first().innerText().catch(() => "");
    await row.click(); // the editor goes to the line, as a user would
    await waitForText(page, "weight_decay=5e-4", "5e-4");
    await shot("01-problems.png");
    // The checklist's failed points stand beside the checks, as information, also in files not open:
    // found through the panel's filter, as a user would (the list shows only the rows it has room for).
    const filter = page.getByPlaceholder(/^Filter \(e\.g\. text/).first();
    await filter.fill("Reproducibility checklist");
    const checklist = page.locator(".markers-panel .monaco-list-row", { hasText: "Reproducibility checklist" }).first();
    await checklist.waitFor({ timeout: 30000 });
    const checklistRow = (await checklist.innerText()).replace(/\s+/g, " ");
    await filter.fill("");
    return { row: text, problems: (await problemRows(page)).length, checklist: checklistRow, status: status.replace(/\s+/g, " ") };
  });

  await step(page, "hover-value-with-quote", async () => {
    const hover = await hoverOver(page, "weight_decay=5e-4", "5e-4", "paperlens — divergence");
    const text = (await hover.innerText()).replace(/\s+/g, " ");
    if (!text.includes("0.05") || !/weight decay/i.test(text)) throw new Error(`the hover does not quote the paper: ${text}`);
    await page.waitForTimeout(300);
    await shot("02-hover-value.png");
    return { hover: text.slice(0, 400) };
  });

  await step(page, "hover-equation-image", async () => {
    await page.mouse.move(5, 5);
    await openFromExplorer(page, "tlm.py");
    const hover = await hoverOver(page, "tempered label weight of Eq. (3)", "Eq. (3)", "Eq. (3)");
    const found = await waitForImage(hover);
    const text = (await hover.innerText()).replace(/\s+/g, " ");
    await page.waitForTimeout(300);
    await shot("03-hover-equation.png");
    await hover.screenshot({ path: path.join(SHOTS, "03b-hover-equation-closeup.png") }).catch(() => undefined);
    return { images: found, hover: text.slice(0, 300) };
  });

  await step(page, "quick-fix-use-the-papers-value", async () => {
    await page.mouse.move(5, 5);
    await page.locator(".tabs-container .tab", { hasText: "train.py" }).first().click();
    await page.locator(".markers-panel .monaco-list-row", { hasText: "weight_decay = 5e-4" }).first().click();
    const box = await waitForText(page, "weight_decay=5e-4", "5e-4");
    await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
    await page.keyboard.press("Escape"); // no hover in the way of the menu
    await page.keyboard.press("Control+.");
    const action = page.locator(".action-widget .monaco-list-row", { hasText: "Use the paper's weight decay (0.05)" }).first();
    await action.waitFor({ timeout: 30000 });
    const offered = (await page.locator(".action-widget .monaco-list-row").allInnerTexts()).map((t) => t.replace(/\s+/g, " ").trim());
    await shot("04-quick-fix-menu.png");
    // The menu is picked from the keyboard (a pointer block covers it against stray clicks).
    const wanted = "Use the paper's weight decay (0.05)";
    for (let i = 0; (await page.locator(".action-widget .monaco-list-row.focused").first().getAttribute("aria-label")) !== wanted; i++) {
      if (i > offered.length) throw new Error(`"${wanted}" cannot be selected in the menu`);
      await page.keyboard.press("ArrowDown");
    }
    await page.keyboard.press("Enter");
    await waitForText(page, "weight_decay=0.05", "0.05");
    const row = page.locator(".markers-panel .monaco-list-row", { hasText: "weight_decay = 5e-4" });
    await row.first().waitFor({ state: "detached", timeout: 30000 });
    await page.waitForTimeout(500);
    await shot("05-quick-fix-applied.png");
    return { offered, problems_after: (await problemRows(page)).map((t) => t.replace(/\s+/g, " ")) };
  });

  await step(page, "paper-view-source-from-palette-and-code-lens", async () => {
    const expected = where.equation3;
    const wanted = `Ln ${expected.line + 1},`;
    const selection = page.locator("#status\\.editor\\.selection");
    const atEquation = async (how) => {
      await page.locator(".tabs-container .tab.active", { hasText: path.basename(expected.file) }).first().waitFor({ timeout: 30000 });
      const deadline = Date.now() + 15000;
      let text = "";
      while (!(text = (await selection.innerText().catch(() => "")).trim()).startsWith(wanted)) {
        if (Date.now() > deadline) throw new Error(`${how}: the paper view is at "${text}", not at ${wanted} of ${expected.file}`);
        await page.waitForTimeout(200);
      }
      return text;
    };
    // "paperlens: Open the paper" with the cursor on the anchor.
    await page.locator(".tabs-container .tab", { hasText: "tlm.py" }).first().click();
    const anchor = await waitForText(page, "tempered label weight of Eq. (3)", "Eq. (3)");
    await page.mouse.click(anchor.x + anchor.width / 2, anchor.y + anchor.height / 2);
    await runCommand(page, "paperlens: Open the paper");
    const fromPalette = await atEquation("the palette");
    await shot("06-paper-view-source.png");
    await page.keyboard.press("Control+W"); // close it: the code lens must open it again
    // The code lens over the function that implements Eq. (3).
    await page.locator(".tabs-container .tab", { hasText: "tlm.py" }).first().click();
    const lens = page.locator(".monaco-editor .codelens-decoration a", { hasText: "Implements Eq. (3)" }).first();
    await lens.waitFor({ timeout: 30000 });
    const title = (await lens.innerText()).trim();
    await lens.click();
    const fromLens = await atEquation("the code lens");
    await page.waitForTimeout(300);
    await shot("07-paper-view-source-from-code-lens.png");
    return { palette_cursor: fromPalette, lens: title, lens_cursor: fromLens, tab: path.basename(expected.file) };
  });

  await step(page, "palette-check-report-questions", async () => {
    await runCommand(page, "paperlens: Check the workspace");
    const toast = page.locator(".notifications-toasts .notification-toast", { hasText: /paperlens: \d+ findings? in \d+ files?/ }).first();
    await toast.waitFor({ timeout: 30000 });
    const checked = (await toast.innerText()).replace(/\s+/g, " ");
    await runCommand(page, "paperlens: Show the readiness report");
    const preview = page.locator(".tabs-container .tab.active", { hasText: /Preview/ }).first();
    await preview.waitFor({ timeout: 30000 });
    const report = await frameWith(page, "h1", 30000);
    const heading = (await report.locator("h1").first().innerText()).trim();
    if (!/readiness report/i.test(heading)) throw new Error(`the preview's heading is "${heading}"`);
    await page.waitForTimeout(300);
    await shot("08-readiness-report.png");
    await runCommand(page, "paperlens: Export open questions");
    const first = await waitForText(page, "# Questions for the authors", "Questions");
    await page.waitForTimeout(300);
    await shot("09-open-questions.png");
    return { check: checked.slice(0, 120), report_heading: heading, questions_at: Math.round(first.y) };
  });

  await step(page, "smoke-run-in-status-bar", async () => {
    await runCommand(page, "paperlens: Run the smoke test");
    const item = page.locator(".statusbar-item", { hasText: "smoke" }).first();
    await item.locator(".codicon-pass").waitFor({ timeout: 60000 });
    const toast = page.locator(".notifications-toasts .notification-toast", { hasText: "smoke run passed" }).first();
    await toast.waitFor({ timeout: 30000 });
    await page.waitForTimeout(300);
    await shot("10-smoke-run.png");
    const label = (await item.getAttribute("aria-label")) || (await item.innerText());
    return { status: label.replace(/\s+/g, " "), message: (await toast.innerText()).replace(/\s+/g, " ").slice(0, 160) };
  });

  await step(page, "scaffold-repository-reviewed", async () => {
    const out = path.join(where.workspace, "reproduction");
    const expected = ["config.toml", "reproduce.py", ".paperlens/plan.json"];
    const onDisk = () => (fs.existsSync(out) ? fs.readdirSync(out, { recursive: true }).map(String).filter((f) => fs.statSync(path.join(out, f)).isFile()) : []);
    await page.mouse.move(5, 5);
    const asked = Date.now();
    await runCommand(page, "paperlens: Scaffold repository from paper");
    // The change annotation asks for confirmation: VS Code shows the edit in its Refactor Preview.
    const panel = page.locator(".bulk-edit-panel");
    const tree = panel.locator('.monaco-list[role="tree"]').first();
    await tree.locator('.monaco-list-row[aria-level="1"]').first().waitFor({ timeout: 60000 });
    const shownAfter = (Date.now() - asked) / 1000;
    if (onDisk().length) throw new Error(`files are on disk before the edit was applied: ${onDisk()}`);
    await page.waitForTimeout(300);
    await shot("15a-scaffold-preview-as-opened.png");
    // Every change of an edit that needs confirmation starts unchecked: the user ticks what to
    // create. Walk the tree from the keyboard (it is virtualised: only the rows in view are in the
    // DOM) and tick each file. The keyboard must be the tree's own: VS Code opens the changes in an
    // editor too, which may take it, and the list ignores keys sent to a (just clicked) checkbox.
    const focused = () =>
      tree.locator(".monaco-list-row.focused").first().evaluate((row) => ({
        index: Number(row.dataset.index),
        label: row.getAttribute("aria-label") || "",
        level: row.getAttribute("aria-level"),
        checked: !!(row.querySelector("input.edit-checkbox") || {}).checked,
        last: row.dataset.lastElement === "true",
        setsize: Number(row.getAttribute("aria-setsize")),
      }));
    const press = async (key) => {
      if (!(await tree.evaluate((el) => el === document.activeElement))) await tree.focus();
      await page.keyboard.press(key);
    };
    await page.waitForTimeout(500);
    await press("Home");
    const listed = [];
    let uncheckedAtFirst = 0;
    let setsize = 0;
    let row = await focused();
    for (let moves = 0; ; moves++) {
      if (moves > 400) throw new Error(`the preview's tree does not end: ${listed.length} files seen, at ${JSON.stringify(row)}`);
      if (row.level === "1" && !listed.includes(row.label)) {
        listed.push(row.label);
        setsize = row.setsize;
        if (!row.checked) {
          uncheckedAtFirst++;
          await tree.locator(".monaco-list-row.focused input.edit-checkbox").first().click();
          if (!(await focused()).checked) throw new Error(`${row.label} cannot be ticked`);
        }
      }
      if (row.last) break;
      await press("ArrowDown");
      const next = await focused();
      if (next.index === row.index) await page.waitForTimeout(100); // the keyboard was elsewhere
      row = next;
    }
    const files = listed.map((label) => (/^Creating (.*?)(?:, also making text edits)?$/.exec(label) || [])[1]);
    if (files.some((f) => !f)) throw new Error(`the preview does not only create files: ${listed}`);
    for (const file of expected) {
      if (!files.includes(`reproduction/${file}`)) throw new Error(`the preview does not list reproduction/${file}: ${files}`);
    }
    if (files.length !== setsize) throw new Error(`${files.length} files seen in the preview, but it has ${setsize}`);
    if (onDisk().length) throw new Error(`files are on disk before the edit was applied: ${onDisk()}`);
    await press("Home"); // the top of the list, for the screenshot
    await page.waitForTimeout(300);
    await shot("15-scaffold-preview.png");
    const reviewed = (Date.now() - asked) / 1000;
    await panel.getByRole("button", { name: "Apply", exact: true }).click();
    const appliedAt = Date.now();
    const explorerRow = (name) => page.locator(".explorer-folders-view .monaco-list-row", { hasText: new RegExp(`^${name.replace(/\./g, "\\.")}`) }).first();
    await explorerRow("reproduction").waitFor({ timeout: 30000 });
    // VS Code creates each file empty on disk and puts its text in an editor it opens, unsaved,
    // one file after the other: once every file is there and no more editors open, the user saves
    // them ("Save All Files": the untitled report and questions are left alone).
    const written = (f) => fs.existsSync(path.join(where.workspace, f)) && fs.statSync(path.join(where.workspace, f)).size > 0;
    const unsaved = async () =>
      (await page.locator(".tabs-container .tab.dirty").evaluateAll((tabs) => tabs.map((t) => t.getAttribute("aria-label") || ""))).filter((label) => !/Untitled-\d+/.test(label));
    const created = () => files.every((f) => fs.existsSync(path.join(where.workspace, f)));
    let dirtyAfterApply = [];
    let emptyAfterApply = [];
    let saves = 0;
    let last = -1;
    let stableSince = Date.now();
    for (const until = Date.now() + 60000; ; ) {
      const pending = await unsaved();
      if (!pending.length && files.every(written)) break;
      if (Date.now() > until) throw new Error(`not saved after ${saves} "Save All Files": ${pending}; on disk: ${onDisk().map((f) => `${f} (${fs.statSync(path.join(out, f)).size} B)`)}`);
      if (pending.length !== last) [last, stableSince] = [pending.length, Date.now()];
      if (pending.length && created() && Date.now() - stableSince >= 1000) {
        if (!saves) [dirtyAfterApply, emptyAfterApply] = [pending, onDisk().filter((f) => fs.statSync(path.join(out, f)).size === 0)];
        await runCommand(page, "File: Save All Files");
        saves++;
        [last, stableSince] = [-1, Date.now()];
      }
      await page.waitForTimeout(250);
    }
    const writtenAfter = (Date.now() - appliedAt) / 1000;
    const files_on_disk = onDisk();
    JSON.parse(fs.readFileSync(path.join(out, ".paperlens", "plan.json"), "utf8")); // whole, not a prefix
    // The new folder in the explorer, opened; the saved config in the editor.
    await explorerRow("reproduction").click();
    await explorerRow("reproduce.py").waitFor({ timeout: 15000 });
    await page.locator('.tabs-container .tab[data-resource-name="config.toml"]').first().click();
    await page.locator('.tabs-container .tab.active[data-resource-name="config.toml"]:not(.dirty)').first().waitFor({ timeout: 15000 });
    await page.mouse.move(5, 5); // no tab's tooltip over the editor
    await page.waitForTimeout(500);
    await shot("16-scaffold-applied.png");
    // Tidy up for what follows: close the saved editors of that group (the untitled report and
    // questions stay), back to tlm.py.
    await runCommand(page, "View: Close Saved Editors in Group");
    await page.locator('.tabs-container .tab[data-resource-name="config.toml"]').first().waitFor({ state: "detached", timeout: 15000 });
    await page.keyboard.press("Escape");
    await page.locator(".tabs-container .tab", { hasText: "tlm.py" }).first().click();
    await page.locator(".tabs-container .tab.active", { hasText: "tlm.py" }).first().waitFor({ timeout: 15000 });
    return {
      files_in_preview: files.length,
      files_on_disk: files_on_disk.length,
      unchecked_at_first: uncheckedAtFirst,
      empty_on_disk_after_apply: emptyAfterApply.length,
      unsaved_editors_after_apply: dirtyAfterApply.length, // train.py's quick fix among them: saved too
      saved_with: saves ? `"File: Save All Files" x${saves}` : null,
      seconds: { preview_shown: shownAfter, reviewed, written_after_apply: writtenAfter, tidied: (Date.now() - asked) / 1000 },
      preview: files,
      on_disk: files_on_disk,
    };
  });

  await step(page, "paper-view-pdf-page", async () => {
    // The PDF as the paper: a workspace setting, which the extension passes on to the server.
    fs.mkdirSync(path.join(where.workspace, ".vscode"), { recursive: true });
    fs.writeFileSync(path.join(where.workspace, ".vscode", "settings.json"), JSON.stringify({ "paperlens.paper": "../paper/paper.pdf" }));
    await page.keyboard.press("Escape");
    await page.locator(".tabs-container .tab", { hasText: "tlm.py" }).first().click();
    const hover = await hoverOver(page, "tempered label weight of Eq. (3)", "Eq. (3)", "paper.pdf p.", 60000);
    const found = await waitForImage(hover);
    await page.waitForTimeout(300);
    await shot("11-hover-pdf.png");
    const link = hover.locator("a", { hasText: "paper.pdf p." }).first();
    const href = (await link.getAttribute("data-href")) || (await link.getAttribute("href")) || "";
    if (!href.startsWith("command:paperlens.showPaper")) throw new Error(`the hover's PDF link is not the paper view's: ${href}`);
    await link.click();
    let view = await frameWith(page, "img#page", 30000);
    const fromHover = await view.locator("img#page").evaluate((img) => img.naturalWidth);
    if (!(fromHover > 0)) throw new Error("the page image did not render");
    // The code lens gives the equation's box: drawn, and scrolled into view.
    await page.mouse.move(5, 5);
    await page.keyboard.press("Escape");
    await page.locator(".tabs-container .tab", { hasText: "tlm.py" }).first().click();
    const lens = page.locator(".monaco-editor .codelens-decoration a", { hasText: "Implements Eq. (3)" }).first();
    await lens.waitFor({ timeout: 30000 });
    // The page opened from the hover has the box too: mark its frame, so that only the page the
    // code lens opens (the view replaces its frame) is measured, never the old one as it goes.
    await view.evaluate(() => (window.paperlensBefore = true)).catch(() => undefined);
    await lens.click();
    const deadline = Date.now() + 30000;
    let box;
    for (;;) {
      view = await frameWith(page, "#box", Math.max(deadline - Date.now(), 1000), () => !window.paperlensBefore);
      box = await view
        .locator("#box")
        .evaluate((el) => {
          const r = el.getBoundingClientRect();
          const img = document.getElementById("page");
          return { top: r.top, bottom: r.bottom, left: r.left, width: r.width, height: r.height, viewport: window.innerHeight, image: img ? img.naturalWidth : 0 };
        })
        .catch(() => undefined); // replaced meanwhile: look again
      if (box && box.image > 0 && box.top >= 0 && box.bottom <= box.viewport) break;
      if (Date.now() > deadline) throw new Error(`the equation's box is not in view: ${JSON.stringify(box)}`);
      await page.waitForTimeout(200);
    }
    const tab = (await page.locator(".tabs-container .tab.active", { hasText: "Paper: page" }).first().innerText()).trim();
    await page.waitForTimeout(500);
    await shot("12-paper-view-page.png");
    return { hover_images: found, link: decodeURIComponent(href).slice(0, 160), page_image_width_from_hover: fromHover, box, tab };
  });
}

/** Runs a command from the palette by its title. */
async function runCommand(page, title) {
  await page.keyboard.press("Escape");
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input").first();
  await input.waitFor({ timeout: 15000 });
  await input.fill(`>${title}`);
  const row = page.locator(".quick-input-widget .monaco-list-row", { hasText: title }).first();
  await row.waitFor({ timeout: 15000 });
  await page.keyboard.press("Enter");
}

/** The (webview) frame holding `selector` (and for which `accept`, run in the frame, is true):
 * the workbench nests each webview in two iframes. */
async function frameWith(page, selector, timeoutMs, accept = () => true) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    for (const frame of page.frames()) {
      if (frame === page.mainFrame()) continue;
      if ((await frame.$(selector).catch(() => null)) && (await frame.evaluate(accept).catch(() => false))) return frame;
    }
    if (Date.now() > deadline) throw new Error(`no frame shows ${selector}`);
    await page.waitForTimeout(250);
  }
}

/** One VS Code session: a fresh user-data and extensions folder with the .vsix installed, a copy
 * of the workspace and paper, code-server on a free port, and Chromium on it. */
async function session(name, options, body) {
  const root = path.join(WORK, name);
  const home = path.join(root, "home");
  const dataDir = path.join(root, "data");
  const extensionsDir = path.join(root, "extensions");
  for (const dir of [home, dataDir, extensionsDir]) fs.mkdirSync(dir, { recursive: true });
  const childEnv = { ...process.env, HOME: home, XDG_CONFIG_HOME: path.join(home, ".config"), XDG_CACHE_HOME: path.join(home, ".cache") };

  let started = Date.now();
  const where = prepareWorkspace(root);
  userSettings(dataDir, options.settings || {});
  execFileSync(CODE_SERVER, ["--user-data-dir", dataDir, "--extensions-dir", extensionsDir, "--install-extension", VSIX], { env: childEnv, stdio: "pipe" });
  results.timings[`${name}_install_seconds`] = (Date.now() - started) / 1000;
  log(`${name}: installed`, VSIX);

  const port = await freePort();
  const serverLog = fs.openSync(path.join(SHOTS, `code-server-${name}.log`), "w");
  const trust = options.trust === false ? [] : ["--disable-workspace-trust"];
  const codeServer = spawn(
    CODE_SERVER,
    ["--auth", "none", "--bind-addr", `127.0.0.1:${port}`, "--disable-telemetry", "--disable-update-check", ...trust,
     "--user-data-dir", dataDir, "--extensions-dir", extensionsDir, where.workspace],
    { env: childEnv, stdio: ["ignore", serverLog, serverLog], detached: true },
  );
  let context;
  const profile = fs.mkdtempSync(path.join(root, "chrome-profile-"));
  try {
    started = Date.now();
    await waitForHttp(`http://127.0.0.1:${port}/healthz`, 60000);
    results.timings[`${name}_code_server_seconds`] = (Date.now() - started) / 1000;
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1400, height: 900 },
      env: childEnv,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    });
    const page = context.pages()[0] || (await context.newPage());
    page.on("console", (m) => {
      if (m.type() === "error") fs.appendFileSync(path.join(SHOTS, `console-errors-${name}.log`), m.text() + "\n");
    });
    started = Date.now();
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(where.workspace)}`);
    await body(page, where, () => extensionLog(dataDir));
    results.timings[`${name}_seconds`] = (Date.now() - started) / 1000;
  } finally {
    if (context) await context.close().catch(() => undefined);
    try {
      process.kill(-codeServer.pid, "SIGTERM"); // its process group: the server, the extension host, paperlens
    } catch {}
    // The extension's log (the paperlens output channel), for whoever reads the results.
    fs.writeFileSync(path.join(SHOTS, `paperlens-output-${name}.log`), extensionLog(dataDir));
    if (!process.env.KEEP_WORK) fs.rmSync(profile, { recursive: true, force: true });
  }
}

/** What the extension wrote to its output channel so far. */
function extensionLog(dataDir) {
  const logs = path.join(dataDir, "logs");
  if (!fs.existsSync(logs)) return "";
  return fs
    .readdirSync(logs, { recursive: true })
    .filter((file) => /paperlens\.log$/.test(String(file)))
    .map((file) => fs.readFileSync(path.join(logs, String(file)), "utf8"))
    .join("");
}

/** Restricted Mode: the paper is still checked; smoke runs and the LLM are off. */
async function restricted(page) {
  await step(page, "restricted-mode", async () => {
    await page.waitForSelector(".monaco-workbench", { timeout: 60000 });
    const no = page.locator(".monaco-dialog-box .monaco-button", { hasText: "No, I don't trust the authors" }).first();
    await no.waitFor({ timeout: 30000 });
    await no.click();
    await page.locator(".statusbar-item", { hasText: "Restricted Mode" }).first().waitFor({ timeout: 30000 });
    await openFromExplorer(page, "train.py");
    await page.waitForSelector(".monaco-editor .squiggly-warning, .monaco-editor .squiggly-error", { timeout: 90000 });
    await page.keyboard.press("F1");
    const input = page.locator(".quick-input-widget input").first();
    await input.fill(">paperlens: ");
    await page.locator(".quick-input-widget .monaco-list-row", { hasText: "paperlens: Index the paper" }).first().waitFor({ timeout: 15000 });
    const offered = (await page.locator(".quick-input-widget .monaco-list-row").allInnerTexts()).map((t) => t.split("\n")[0]);
    await page.screenshot({ path: path.join(SHOTS, "13-restricted-mode.png") });
    await page.keyboard.press("Escape");
    if (offered.some((t) => t.includes("Run the smoke test"))) throw new Error(`the smoke run is offered in Restricted Mode: ${offered}`);
    return { offered };
  });
}

/** An interpreter without paperlens: the exact command to run, and nothing started. */
async function notInstalled(page, where, extensionLogSoFar) {
  await step(page, "not-installed-message", async () => {
    await page.waitForSelector(".monaco-workbench", { timeout: 60000 });
    await openFromExplorer(page, "train.py");
    const toast = page.locator(".notifications-toasts .notification-toast", { hasText: "paperlens is not installed" }).first();
    await toast.waitFor({ timeout: 60000 });
    const text = (await toast.innerText()).replace(/\s+/g, " ");
    await page.waitForTimeout(300);
    await page.screenshot({ path: path.join(SHOTS, "14-not-installed.png") });
    return { message: text.slice(0, 800), log: extensionLogSoFar().split("\n").filter((l) => /\[error\]/.test(l)).slice(0, 2) };
  });
}

async function main() {
  await session("walk-through", {}, async (page, where) => {
    where.equation3 = equationLine(where.paper, "3");
    await walkThrough(page, where);
  });
  await session("restricted", { trust: false, settings: { "security.workspace.trust.enabled": true, "paperlens.smokeOnSave": true } }, async (page, where, logSoFar) => {
    await restricted(page);
    const settings = logSoFar().split("\n").find((line) => line.includes("settings for the server:")) || "";
    results.steps[results.steps.length - 1].detail.server_settings = settings.replace(/^.*settings for the server: /, "");
  });
  // The same Python without its site-packages (-S) and isolated (-I): paperlens is not there.
  const bare = path.join(WORK, "python-without-paperlens");
  fs.writeFileSync(bare, `#!/bin/sh\nexec ${JSON.stringify(PYTHON)} -I -S "$@"\n`, { mode: 0o755 });
  await session("not-installed", { settings: { "paperlens.interpreter": bare } }, notInstalled);
}

main()
  .finally(() => {
    results.timings.total_seconds = elapsed();
    fs.writeFileSync(path.join(SHOTS, "results.json"), JSON.stringify(results, null, 2));
  })
  .then(
  () => {
    log(`all ${results.steps.length} steps passed; screenshots in ${SHOTS}`);
    process.exit(0);
  },
  (err) => {
    console.error(`[${elapsed().toFixed(1)}s] FAILED:`, err && err.stack ? err.stack : err);
    process.exit(1);
  },
);
