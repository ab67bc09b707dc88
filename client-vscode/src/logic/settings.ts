// The `paperlens` settings as the server reads them (schemas/json/editor-settings.schema.json):
// sent as initializationOptions, as the answer to workspace/configuration and in
// workspace/didChangeConfiguration. Plain logic: no `vscode` import.

/** The server's settings; anything else in the section (interpreter, trace) is the client's. */
export const SERVER_KEYS = ["paper", "checks", "severity", "paperGaps", "checklist", "debounceMs", "llm", "smokeOnSave", "sandbox"] as const;
const NESTED: Record<string, readonly string[]> = {
  severity: ["divergence", "guess", "unimplemented", "agreement"],
  llm: ["baseUrl", "model"],
  sandbox: ["mode", "image", "buildNetwork", "command", "memory", "cpus", "pids", "timeoutSeconds", "network", "scratch", "outputLimitBytes"],
};

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function unset(value: unknown): boolean {
  return value === null || value === undefined || (typeof value === "string" && value.trim() === "");
}

/**
 * The settings the server gets. An unset value (null, empty) is left out, so the server's own
 * default or the workspace's `[tool.paperlens]` holds: for the sandbox this matters, as a value
 * sent overrides the workspace's field by field. In an untrusted workspace nothing that runs code
 * or sends text to an LLM is on: no smoke on save, no `llm`.
 */
export function serverSettings(section: Record<string, unknown> | undefined, trusted: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of SERVER_KEYS) {
    const value = section?.[key];
    if (unset(value)) continue;
    const fields = NESTED[key];
    if (fields && isObject(value)) {
      const nested: Record<string, unknown> = {};
      for (const field of fields) {
        const inner = value[field];
        if (unset(inner) || (Array.isArray(inner) && inner.length === 0)) continue;
        nested[field] = inner;
      }
      if (Object.keys(nested).length > 0) out[key] = nested;
    } else if (!fields) {
      out[key] = value;
    }
  }
  if (!trusted) {
    out.smokeOnSave = false;
    delete out.llm;
  }
  return out;
}

/** The environment of the server process: the stored LLM key as PAPERLENS_LLM_API_KEY; in an
 * untrusted workspace no LLM configuration at all. */
export function serverEnvironment(base: NodeJS.ProcessEnv, trusted: boolean, storedKey?: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base };
  if (!trusted) {
    for (const name of Object.keys(env)) {
      if (name.startsWith("PAPERLENS_LLM_") || name === "OPENAI_API_KEY" || name === "OPENAI_BASE_URL") delete env[name];
    }
    return env;
  }
  if (storedKey) env.PAPERLENS_LLM_API_KEY = storedKey;
  return env;
}

/** Dotted contributed settings (`paperlens.sandbox.memory`) with their defaults, as the nested
 * section VS Code returns for `getConfiguration("paperlens")`. */
export function defaultsOf(properties: Record<string, { default?: unknown }>, prefix = "paperlens."): Record<string, unknown> {
  const section: Record<string, unknown> = {};
  for (const [name, property] of Object.entries(properties)) {
    if (!name.startsWith(prefix)) continue;
    const parts = name.slice(prefix.length).split(".");
    let at = section;
    for (const part of parts.slice(0, -1)) {
      at = (at[part] = isObject(at[part]) ? at[part] : {}) as Record<string, unknown>;
    }
    at[parts[parts.length - 1]] = property.default ?? null;
  }
  return section;
}
