import assert from "node:assert/strict";
import { test } from "node:test";

import { expandPath, installCommand, notInstalledMessage, resolveInterpreter } from "../src/logic/interpreter";

const folders = ["/home/u/project"];
const never = async () => {
  throw new Error("the Python extension must not be asked");
};

test("the setting wins over the Python extension and the default", async () => {
  const chosen = await resolveInterpreter({ setting: "/opt/py/bin/python", pythonExtension: never, trusted: true, workspaceFolders: folders });
  assert.deepEqual(chosen, { command: "/opt/py/bin/python", source: "setting", notes: [] });
});

test("the setting expands ~ and ${workspaceFolder}", async () => {
  const chosen = await resolveInterpreter({ setting: "${workspaceFolder}/.venv/bin/python", trusted: true, workspaceFolders: folders });
  assert.equal(chosen.command, "/home/u/project/.venv/bin/python");
  assert.equal(expandPath("~/venv/bin/python", folders, "/home/u"), "/home/u/venv/bin/python");
  assert.equal(expandPath("  python3.12 ", folders), "python3.12");
});

test("without a setting, the Python extension's active environment", async () => {
  for (const setting of [undefined, null, "", "   "]) {
    const chosen = await resolveInterpreter({ setting, pythonExtension: async () => "/envs/a/bin/python", trusted: true, workspaceFolders: folders });
    assert.deepEqual(chosen, { command: "/envs/a/bin/python", source: "python-extension", notes: [] });
  }
});

test("without either, python3 (python on Windows)", async () => {
  assert.equal((await resolveInterpreter({ setting: null, trusted: true, workspaceFolders: folders, platform: "linux" })).command, "python3");
  assert.equal((await resolveInterpreter({ setting: null, trusted: true, workspaceFolders: folders, platform: "win32" })).command, "python");
  const none = await resolveInterpreter({ setting: null, pythonExtension: async () => undefined, trusted: true, workspaceFolders: folders, platform: "linux" });
  assert.deepEqual(none, { command: "python3", source: "default", notes: [] });
});

test("a failing Python extension falls through to the default, with a note", async () => {
  const chosen = await resolveInterpreter({ setting: "", pythonExtension: async () => Promise.reject(new Error("no API")), trusted: true, workspaceFolders: folders, platform: "linux" });
  assert.equal(chosen.source, "default");
  assert.match(chosen.notes[0], /no API/);
});

test("an untrusted workspace's own environment is not run; one outside it is", async () => {
  const inside = await resolveInterpreter({ setting: null, pythonExtension: async () => "/home/u/project/.venv/bin/python", trusted: false, workspaceFolders: folders, platform: "linux" });
  assert.equal(inside.command, "python3");
  assert.match(inside.notes[0], /untrusted/);
  const outside = await resolveInterpreter({ setting: null, pythonExtension: async () => "/home/u/project-other/.venv/bin/python", trusted: false, workspaceFolders: folders });
  assert.equal(outside.source, "python-extension");
  const trusted = await resolveInterpreter({ setting: null, pythonExtension: async () => "/home/u/project/.venv/bin/python", trusted: true, workspaceFolders: folders });
  assert.equal(trusted.source, "python-extension");
});

test("what to run when paperlens is not installed there", () => {
  assert.equal(installCommand("/usr/bin/python3"), "/usr/bin/python3 -m pip install paperlens");
  assert.equal(installCommand("/My Envs/python", "/src/paper lens"), '"/My Envs/python" -m pip install -e "/src/paper lens"');
  const missing = notInstalledMessage({ command: "/e/bin/python", source: "setting", notes: [] }, { code: 1, stderr: "Traceback...\nModuleNotFoundError: No module named 'paperlens'\n" });
  assert.equal(missing, "paperlens is not installed for /e/bin/python (the paperlens.interpreter setting) — ModuleNotFoundError: No module named 'paperlens'. Run: /e/bin/python -m pip install paperlens");
  const absent = notInstalledMessage({ command: "python3", source: "default", notes: [] }, { code: "ENOENT" }, "/src/paperlens");
  assert.match(absent, /python3 \(the default interpreter\) was not found/);
  assert.match(absent, /python3 -m pip install -e \/src\/paperlens$/);
});
