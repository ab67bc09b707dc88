// paperlens for VS Code: the paperlens language server, started from the user's Python, with the
// paper view, the status bar and commands around it.

import * as fs from "fs";
import * as path from "path";
import * as vscode from "vscode";

import { API_KEY_SECRET, PaperlensClient, SECTION } from "./client";
import { PaperLocation, SHOW_PAPER } from "./logic/links";
import { PaperPanel } from "./paperPanel";
import { onActiveInterpreterChanged } from "./python";
import { StatusBar } from "./statusBar";

let client: PaperlensClient | undefined;

/** The paperlens checkout the extension runs from (development), for an editable install hint. */
function checkoutOf(extensionPath: string): string | undefined {
  const root = path.dirname(extensionPath);
  try {
    return /^name\s*=\s*"paperlens"/m.test(fs.readFileSync(path.join(root, "pyproject.toml"), "utf8")) ? root : undefined;
  } catch {
    return undefined;
  }
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = vscode.window.createOutputChannel("paperlens", { log: true });
  const status = new StatusBar();
  const panel = new PaperPanel();
  const paperlens = new PaperlensClient(context, log, status, panel, checkoutOf(context.extensionPath));
  client = paperlens;
  context.subscriptions.push(log, status, panel, paperlens);

  context.subscriptions.push(
    vscode.commands.registerCommand("paperlens.restart", () => paperlens.restart()),
    vscode.commands.registerCommand("paperlens.showLog", () => log.show()),
    vscode.commands.registerCommand(SHOW_PAPER, (location?: PaperLocation) =>
      location && typeof location === "object" && "file" in location ? paperlens.openPaper(location) : paperlens.openPaperAtCursor(),
    ),
    vscode.commands.registerCommand("paperlens.setApiKey", async () => {
      const key = await vscode.window.showInputBox({
        title: "paperlens: LLM API key",
        prompt: "Stored in VS Code's secret storage and given to the server as PAPERLENS_LLM_API_KEY; empty to remove it",
        password: true,
        ignoreFocusOut: true,
      });
      if (key === undefined) return;
      if (key.trim()) await context.secrets.store(API_KEY_SECRET, key.trim());
      else await context.secrets.delete(API_KEY_SECRET);
      log.info(key.trim() ? "LLM API key stored; restarting the server" : "LLM API key removed; restarting the server");
      await paperlens.restart();
    }),
    // The interpreter is a launch setting: a change restarts the server (the rest is sent to it).
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration(`${SECTION}.interpreter`)) void paperlens.restart();
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(() => void paperlens.restart()),
  );
  void onActiveInterpreterChanged(() => {
    if (!vscode.workspace.getConfiguration(SECTION).get<string | null>("interpreter")) void paperlens.restart();
  }).then((disposable) => disposable && context.subscriptions.push(disposable));

  void paperlens.start(); // activation does not wait for the server
}

export async function deactivate(): Promise<void> {
  await client?.stop();
}
