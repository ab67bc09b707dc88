// The status bar item: starting, indexing…, ready with the counts of paperlens' diagnostics, the
// last smoke run. Clicking it lists paperlens' commands.

import * as vscode from "vscode";

import { StatusState, statusText } from "./logic/status";

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("paperlens.status", vscode.StatusBarAlignment.Left, 10);
  private readonly subscriptions: vscode.Disposable[] = [];
  private recount: NodeJS.Timeout | undefined;
  state: StatusState = { phase: "starting", counts: { error: 0, warning: 0, info: 0, hint: 0 } };

  constructor() {
    this.item.name = "paperlens";
    this.item.command = { title: "paperlens commands", command: "workbench.action.quickOpen", arguments: [">paperlens: "] };
    this.subscriptions.push(vscode.languages.onDidChangeDiagnostics(() => this.scheduleRecount()));
    this.render();
    this.item.show();
  }

  update(change: Partial<StatusState>): void {
    this.state = { ...this.state, ...change };
    this.render();
  }

  private scheduleRecount(): void {
    if (this.recount) return;
    this.recount = setTimeout(() => {
      this.recount = undefined;
      const counts = { error: 0, warning: 0, info: 0, hint: 0 };
      for (const [, diagnostics] of vscode.languages.getDiagnostics()) {
        for (const d of diagnostics) {
          if (d.source !== "paperlens") continue;
          if (d.severity === vscode.DiagnosticSeverity.Error) counts.error++;
          else if (d.severity === vscode.DiagnosticSeverity.Warning) counts.warning++;
          else if (d.severity === vscode.DiagnosticSeverity.Information) counts.info++;
          else counts.hint++;
        }
      }
      this.update({ counts });
    }, 150);
  }

  private render(): void {
    const { text, tooltip } = statusText(this.state);
    this.item.text = text;
    this.item.tooltip = tooltip;
    this.item.backgroundColor = this.state.phase === "failed" ? new vscode.ThemeColor("statusBarItem.errorBackground") : undefined;
  }

  dispose(): void {
    if (this.recount) clearTimeout(this.recount);
    this.item.dispose();
    for (const s of this.subscriptions) s.dispose();
  }
}
