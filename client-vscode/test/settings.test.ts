import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

import { defaultsOf, SERVER_KEYS, serverEnvironment, serverSettings } from "../src/logic/settings";

// Compiled into out-test/: the package and the repository's schema are found from the working
// directory, client-vscode/ (npm test runs there).
const root = process.cwd();
const manifest = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"));
const properties: Record<string, any> = manifest.contributes.configuration.properties;
const schema = JSON.parse(fs.readFileSync(path.join(root, "..", "schemas", "json", "editor-settings.schema.json"), "utf8"));

test("the defaults VS Code gives become what the server's own defaults are, and nothing client-only", () => {
  const section = defaultsOf(properties);
  assert.deepEqual(serverSettings(section, true), {
    checks: ["divergence", "guess", "unimplemented", "agreement"],
    paperGaps: true,
    checklist: true,
    debounceMs: 300,
    smokeOnSave: true,
  });
  assert.ok("interpreter" in section && "trace" in section);
});

test("every setting of the server's schema is contributed, with a description and the same default", () => {
  const top = schema.properties as Record<string, any>;
  assert.deepEqual([...SERVER_KEYS].sort(), Object.keys(top).sort());
  const nested: Record<string, string[]> = {
    severity: top.severity.propertyNames.enum,
    llm: Object.keys(schema.$defs.EditorLLMSettings.properties),
    sandbox: Object.keys(schema.$defs.SandboxSettings.properties),
  };
  for (const key of Object.keys(top)) {
    const names = nested[key] ? nested[key].map((field) => `paperlens.${key}.${field}`) : [`paperlens.${key}`];
    for (const name of names) {
      const property = properties[name];
      assert.ok(property, `${name} is contributed`);
      assert.ok((property.markdownDescription || property.description || "").length > 20, `${name} has a description`);
      if (!nested[key]) assert.deepEqual(property.default ?? null, top[key].default ?? null, `${name}'s default`);
      else assert.equal(property.default, null, `${name} is unset by default, so the workspace's value holds`);
    }
  }
  const sandbox = schema.$defs.SandboxSettings.properties;
  for (const field of ["memory", "scratch"]) assert.equal(properties[`paperlens.sandbox.${field}`].pattern, sandbox[field].pattern);
  assert.deepEqual(properties["paperlens.checks"].items.enum, top.checks.items.enum);
  assert.deepEqual(properties["paperlens.severity.guess"].enum.filter(Boolean), top.severity.additionalProperties.enum);
});

test("set values pass through; unset ones (null, empty) are left out, so the workspace's hold", () => {
  const section = defaultsOf(properties) as any;
  section.paper = "paper/main.tex";
  section.severity.guess = "off";
  section.llm.baseUrl = "http://127.0.0.1:8080/v1";
  section.sandbox.memory = "2g";
  section.sandbox.command = ["python", "train.py", "--smoke"];
  section.sandbox.network = false;
  section.sandbox.image = "";
  section.interpreter = "/venv/bin/python";
  assert.deepEqual(serverSettings(section, true), {
    paper: "paper/main.tex",
    checks: ["divergence", "guess", "unimplemented", "agreement"],
    severity: { guess: "off" },
    paperGaps: true,
    checklist: true,
    debounceMs: 300,
    llm: { baseUrl: "http://127.0.0.1:8080/v1" },
    smokeOnSave: true,
    sandbox: { command: ["python", "train.py", "--smoke"], memory: "2g", network: false },
  });
  assert.deepEqual(serverSettings({ paper: "  ", sandbox: { command: [] }, severity: {} }, true), {});
  assert.deepEqual(serverSettings(undefined, true), {});
});

test("an untrusted workspace: no smoke on save, no LLM", () => {
  const section = defaultsOf(properties) as any;
  section.llm.baseUrl = "http://127.0.0.1:8080/v1";
  section.llm.model = "m";
  section.smokeOnSave = true;
  section.sandbox.image = "python:3.12";
  const untrusted = serverSettings(section, false);
  assert.equal(untrusted.smokeOnSave, false);
  assert.equal("llm" in untrusted, false);
  assert.deepEqual(untrusted.checks, ["divergence", "guess", "unimplemented", "agreement"]);
  assert.equal(serverSettings({}, false).smokeOnSave, false);
});

test("the restricted configurations cover what runs code or reaches an LLM", () => {
  const restricted: string[] = manifest.capabilities.untrustedWorkspaces.restrictedConfigurations;
  assert.equal(manifest.capabilities.untrustedWorkspaces.supported, "limited");
  for (const name of Object.keys(properties)) {
    if (name.startsWith("paperlens.sandbox.") || name.startsWith("paperlens.llm.")) assert.ok(restricted.includes(name), name);
  }
  for (const name of ["paperlens.interpreter", "paperlens.smokeOnSave"]) assert.ok(restricted.includes(name), name);
});

test("the API key reaches the server only through its environment, and never when untrusted", () => {
  const base = { PATH: "/bin", PAPERLENS_LLM_BASE_URL: "http://x", OPENAI_API_KEY: "sk-env" };
  assert.deepEqual(serverEnvironment(base, true, "sk-stored"), { ...base, PAPERLENS_LLM_API_KEY: "sk-stored" });
  assert.deepEqual(serverEnvironment(base, true), base);
  assert.deepEqual(serverEnvironment({ ...base, PAPERLENS_LLM_API_KEY: "k" }, false, "sk-stored"), { PATH: "/bin" });
  assert.equal(Object.keys(properties).some((name) => /key|secret|token/i.test(name)), false);
});
