// The Python extension's active environment (ms-python.python), when that extension is installed.
// Only the part of its API used here is declared, so the extension needs no package of its types.

import * as vscode from "vscode";

interface EnvironmentPath {
  id: string;
  path: string;
}

interface ResolvedEnvironment {
  executable: { uri?: vscode.Uri };
}

interface PythonExtensionApi {
  environments: {
    getActiveEnvironmentPath(resource?: vscode.Uri): EnvironmentPath;
    resolveEnvironment(environment: EnvironmentPath | string): Promise<ResolvedEnvironment | undefined>;
    onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
  };
}

const PYTHON_EXTENSION = "ms-python.python";

async function api(): Promise<PythonExtensionApi | undefined> {
  const extension = vscode.extensions.getExtension<PythonExtensionApi>(PYTHON_EXTENSION);
  if (!extension) return undefined;
  const exports = extension.isActive ? extension.exports : await extension.activate();
  return exports?.environments ? exports : undefined;
}

export function pythonExtensionInstalled(): boolean {
  return vscode.extensions.getExtension(PYTHON_EXTENSION) !== undefined;
}

/** The active environment's executable for `resource`, or undefined. */
export async function activeInterpreter(resource?: vscode.Uri): Promise<string | undefined> {
  const python = await api();
  if (!python) return undefined;
  const active = python.environments.getActiveEnvironmentPath(resource);
  const resolved = await python.environments.resolveEnvironment(active);
  return resolved?.executable.uri?.fsPath ?? active.path;
}

/** Calls `listener` when the user picks another environment. */
export async function onActiveInterpreterChanged(listener: () => void): Promise<vscode.Disposable | undefined> {
  const python = await api();
  return python?.environments.onDidChangeActiveEnvironmentPath(() => listener());
}
