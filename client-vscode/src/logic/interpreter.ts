// Which Python runs the server, and what to tell the user when paperlens is not installed there.
// Plain logic: no `vscode` import, so `node --test` covers it.

import * as os from "os";
import * as path from "path";

export type InterpreterSource = "setting" | "python-extension" | "default";

export interface Interpreter {
  /** The executable (or a command on PATH, for the default). */
  command: string;
  source: InterpreterSource;
  /** Why an earlier source was passed over, for the log. */
  notes: string[];
}

export interface InterpreterInputs {
  /** `paperlens.interpreter` (in an untrusted workspace VS Code gives only the user's value). */
  setting: string | null | undefined;
  /** The Python extension's active environment's executable, when that extension is installed. */
  pythonExtension?: () => Promise<string | undefined>;
  trusted: boolean;
  /** Absolute paths of the workspace folders. */
  workspaceFolders: readonly string[];
  platform?: NodeJS.Platform;
  home?: string;
}

/** `~` and `${workspaceFolder}` (the first folder) expanded, as users write them in settings. */
export function expandPath(value: string, workspaceFolders: readonly string[], home: string = os.homedir()): string {
  let out = value.trim();
  if (workspaceFolders.length > 0) {
    out = out.split("${workspaceFolder}").join(workspaceFolders[0]);
  }
  if (out === "~" || out.startsWith("~/")) {
    out = path.join(home, out.slice(1));
  }
  return out;
}

function inside(file: string, folder: string): boolean {
  const relative = path.relative(folder, file);
  return relative === "" || (!relative.startsWith("..") && !path.isAbsolute(relative));
}

/**
 * The interpreter, in this order: the `paperlens.interpreter` setting, else the Python extension's
 * active environment, else `python3` (`python` on Windows). In an untrusted workspace an
 * environment inside the workspace is not run: it is the workspace's code.
 */
export async function resolveInterpreter(inputs: InterpreterInputs): Promise<Interpreter> {
  const notes: string[] = [];
  const setting = (inputs.setting ?? "").trim();
  if (setting) {
    return { command: expandPath(setting, inputs.workspaceFolders, inputs.home), source: "setting", notes };
  }
  if (inputs.pythonExtension) {
    let found: string | undefined;
    try {
      found = await inputs.pythonExtension();
    } catch (err) {
      notes.push(`the Python extension gave no environment (${err instanceof Error ? err.message : String(err)})`);
    }
    if (found) {
      if (!inputs.trusted && inputs.workspaceFolders.some((folder) => inside(found as string, folder))) {
        notes.push(`not running ${found}: it lies in this untrusted workspace`);
      } else {
        return { command: found, source: "python-extension", notes };
      }
    }
  }
  return { command: (inputs.platform ?? process.platform) === "win32" ? "python" : "python3", source: "default", notes };
}

function shellQuote(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `"${value.replace(/(["\\$`])/g, "\\$1")}"`;
}

/** The command that installs paperlens into `python`: from a checkout when the extension runs
 * from one (an editable install), else the published package. */
export function installCommand(python: string, checkout?: string): string {
  return checkout
    ? `${shellQuote(python)} -m pip install -e ${shellQuote(checkout)}`
    : `${shellQuote(python)} -m pip install paperlens`;
}

/** What the user reads when `python -c "import paperlens.server"` failed. */
export function notInstalledMessage(interpreter: Interpreter, error: { code?: string | number; stderr?: string }, checkout?: string): string {
  const where = {
    setting: "the paperlens.interpreter setting",
    "python-extension": "the Python extension's active environment",
    default: "the default interpreter",
  }[interpreter.source];
  if (error.code === "ENOENT") {
    return `paperlens: ${interpreter.command} (${where}) was not found. Set paperlens.interpreter to a Python ≥ 3.11 that has paperlens, or install it: ${installCommand(interpreter.command, checkout)}`;
  }
  const last = (error.stderr ?? "").trim().split("\n").filter(Boolean).pop();
  return `paperlens is not installed for ${interpreter.command} (${where})${last ? ` — ${last}` : ""}. Run: ${installCommand(interpreter.command, checkout)}`;
}
