// The paper view: a text source opened at the place (the range revealed and selected), or a PDF
// page in a webview with the item's box drawn and scrolled into view.

import * as crypto from "crypto";
import * as vscode from "vscode";

import { PageView, PaperView, pageHtml } from "./logic/paperView";

export class PaperPanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;

  async show(view: PaperView): Promise<void> {
    if (view.kind === "source") {
      await showSource(vscode.Uri.parse(view.uri), view.line, view.column, view.endLine, view.endColumn);
    } else {
      this.showPage(view);
    }
  }

  private showPage(view: PageView): void {
    const title = `Paper: page ${view.page}`;
    if (!this.panel) {
      this.panel = vscode.window.createWebviewPanel("paperlens.paperView", title, { viewColumn: vscode.ViewColumn.Beside, preserveFocus: false }, {
        enableScripts: true, // one inline script with a nonce: scroll the box into view
        localResourceRoots: [],
        retainContextWhenHidden: false,
      });
      this.panel.onDidDispose(() => (this.panel = undefined));
    } else {
      this.panel.title = title;
      this.panel.reveal(this.panel.viewColumn, false); // where the user left it
    }
    this.panel.webview.html = pageHtml(view, crypto.randomBytes(16).toString("base64"));
  }

  dispose(): void {
    this.panel?.dispose();
  }
}

/** The source beside the code, the place selected (to its end when known, else to the end of
 * its first line) and centred. */
export async function showSource(uri: vscode.Uri, line: number, column: number, endLine?: number, endColumn?: number): Promise<vscode.TextEditor> {
  const document = await vscode.workspace.openTextDocument(uri);
  const last = Math.max(document.lineCount - 1, 0);
  const start = document.validatePosition(new vscode.Position(Math.min(Math.max(line, 0), last), Math.max(column, 0)));
  const end =
    endLine !== undefined && endLine >= start.line
      ? document.validatePosition(new vscode.Position(Math.min(endLine, last), endColumn ?? Number.MAX_SAFE_INTEGER))
      : document.lineAt(start.line).range.end;
  // Anchored at the end, so the cursor (and the status bar's "Ln") is at the equation's first line.
  const selection = new vscode.Selection(end.isBefore(start) ? start : end, start);
  const editor = await vscode.window.showTextDocument(document, { viewColumn: vscode.ViewColumn.Beside, preserveFocus: false });
  editor.selection = selection; // as a Selection: the show option would take it as a Range and lose its direction
  editor.revealRange(selection, vscode.TextEditorRevealType.InCenter);
  return editor;
}
