// The language client: starts `<python> -m paperlens.server` over stdio, hands it the settings,
// and turns the server's command results into what VS Code shows (documents, previews, the paper
// view, the status bar).

import { execFile } from "child_process";
import * as vscode from "vscode";
import {
  CodeLensRequest,
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  Middleware,
  ResponseError,
  RevealOutputChannelOn,
  ServerOptions,
  ShowMessageNotification,
  MessageType,
  State,
  WorkDoneProgressBegin,
  WorkDoneProgressEnd,
  WorkDoneProgressReport,
} from "vscode-languageclient/node";

import { installCommand, Interpreter, notInstalledMessage, resolveInterpreter } from "./logic/interpreter";
import { PaperLocation, paperLinkLocation, rewriteHoverMarkdown, SHOW_PAPER } from "./logic/links";
import { isPaperView } from "./logic/paperView";
import { SERVER_KEYS, serverEnvironment, serverSettings } from "./logic/settings";
import { smokeFromResult } from "./logic/status";
import { PaperPanel, showSource } from "./paperPanel";
import { activeInterpreter, pythonExtensionInstalled } from "./python";
import { StatusBar } from "./statusBar";

export const SECTION = "paperlens";
export const API_KEY_SECRET = "paperlens.llmApiKey";
// The server's commands (workspace/executeCommand).
export const REINDEX = "paperlens.reindex";
export const CHECK_WORKSPACE = "paperlens.checkWorkspace";
export const READINESS_REPORT = "paperlens.readinessReport";
export const EXPORT_QUESTIONS = "paperlens.exportQuestions";
export const RUN_SMOKE = "paperlens.runSmoke";
export const PAPER_VIEW = "paperlens.paperView";
export const OPEN_PAPER = "paperlens.openPaper";

const IMPORT_CHECK_TIMEOUT_MS = 60_000;
const SMOKE_MESSAGE = /^paperlens: smoke run (passed|failed|not made)(?: in ([\d.]+) s)?(.*)$/s;

type ImportCheck = { ok: true } | { ok: false; code?: string | number; stderr?: string };

function importCheck(python: string, env: NodeJS.ProcessEnv, cwd: string | undefined): Promise<ImportCheck> {
  return new Promise((resolve) => {
    execFile(python, ["-c", "import paperlens.server"], { env, cwd, timeout: IMPORT_CHECK_TIMEOUT_MS }, (error, _stdout, stderr) => {
      if (!error) resolve({ ok: true });
      else resolve({ ok: false, code: (error as NodeJS.ErrnoException).code ?? error.message, stderr: String(stderr || error.message) });
    });
  });
}

export class PaperlensClient implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private interpreter: Interpreter | undefined;
  private queue: Promise<void> = Promise.resolve();
  /** The settings the server has last been given (initialization, pull or push), as JSON. */
  private lastSettings = "";
  private readonly progress = new Map<string | number, string>();

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly log: vscode.LogOutputChannel,
    private readonly status: StatusBar,
    private readonly panel: PaperPanel,
    private readonly checkout: string | undefined,
  ) {}

  get running(): boolean {
    return this.client?.isRunning() ?? false;
  }

  /** Start, stop and restart run one at a time, in the order asked. */
  start(): Promise<void> {
    return (this.queue = this.queue.then(() => this.doStart()).catch((err) => this.failed(String(err))));
  }

  restart(): Promise<void> {
    return (this.queue = this.queue.then(() => this.doStop()).then(() => this.doStart()).catch((err) => this.failed(String(err))));
  }

  stop(): Promise<void> {
    return (this.queue = this.queue.then(() => this.doStop()));
  }

  private failed(message: string): void {
    this.log.error(message);
    this.status.update({ phase: "failed", problem: message });
  }

  private settingsFor(scope?: vscode.Uri): Record<string, unknown> {
    const section = vscode.workspace.getConfiguration(SECTION, scope);
    const raw: Record<string, unknown> = {};
    for (const key of SERVER_KEYS) {
      raw[key] = section.get(key);
    }
    return serverSettings(raw, vscode.workspace.isTrusted);
  }

  private folder(): vscode.WorkspaceFolder | undefined {
    return vscode.workspace.workspaceFolders?.[0];
  }

  private async doStart(): Promise<void> {
    const trusted = vscode.workspace.isTrusted;
    const folder = this.folder();
    this.status.update({ phase: "starting", untrusted: !trusted, smoke: undefined });
    const interpreter = await resolveInterpreter({
      setting: vscode.workspace.getConfiguration(SECTION, folder?.uri).get<string | null>("interpreter"),
      pythonExtension: pythonExtensionInstalled() ? () => activeInterpreter(folder?.uri) : undefined,
      trusted,
      workspaceFolders: (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath),
    });
    this.interpreter = interpreter;
    for (const note of interpreter.notes) this.log.info(note);
    this.log.info(`interpreter: ${interpreter.command} (${interpreter.source})${trusted ? "" : "; untrusted workspace: smoke runs and the LLM are off"}`);
    const env = serverEnvironment(process.env, trusted, trusted ? await this.context.secrets.get(API_KEY_SECRET) : undefined);
    const cwd = folder?.uri.fsPath;
    const check = await importCheck(interpreter.command, env, cwd);
    if (!check.ok) {
      const message = notInstalledMessage(interpreter, check, this.checkout);
      this.log.error(message);
      if (check.stderr) this.log.error(check.stderr.trim());
      this.status.update({ phase: "failed", problem: message, interpreter: interpreter.command });
      void this.offerFixes(message, installCommand(interpreter.command, this.checkout));
      return;
    }
    const serverOptions: ServerOptions = { command: interpreter.command, args: ["-m", "paperlens.server"], options: { env, cwd } };
    const initializationOptions = this.settingsFor(folder?.uri);
    this.lastSettings = JSON.stringify(initializationOptions);
    this.log.info(`settings for the server: ${this.lastSettings}`);
    const clientOptions: LanguageClientOptions = {
      documentSelector: [
        { scheme: "file", language: "python" },
        { scheme: "file", language: "latex" },
        { scheme: "file", language: "tex" },
        { scheme: "file", language: "markdown" },
      ],
      synchronize: { configurationSection: SECTION },
      initializationOptions,
      outputChannel: this.log,
      traceOutputChannel: this.log,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      middleware: this.middleware(),
    };
    const client = new LanguageClient(SECTION, "paperlens", serverOptions, clientOptions);
    this.client = client;
    this.progress.clear();
    // The client restarts a server that crashed (a few times); the status bar and the palette follow.
    client.onDidChangeState(({ newState }) => {
      if (this.client !== client) return;
      void vscode.commands.executeCommand("setContext", "paperlens.serverRunning", newState === State.Running);
      if (newState === State.Stopped) this.status.update({ phase: "stopped" });
      else if (newState === State.Starting) this.status.update({ phase: "starting" });
    });
    await client.start();
    // The server's summary of a smoke run also sets the status bar's last result.
    client.onNotification(ShowMessageNotification.type, (message) => this.showMessage(message.type, message.message));
    await vscode.commands.executeCommand("setContext", "paperlens.serverRunning", true);
    // "starting" until the server's first reading of the paper ends (its progress), or at worst a while.
    this.status.update({ interpreter: interpreter.command });
    setTimeout(() => {
      if (this.client === client && this.status.state.phase === "starting") this.status.update({ phase: "ready" });
    }, 30_000);
  }

  private async doStop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    await vscode.commands.executeCommand("setContext", "paperlens.serverRunning", false);
    if (client) {
      try {
        await client.stop(5000);
      } catch (err) {
        this.log.warn(`stopping the server: ${err}`);
      }
      await client.dispose().catch(() => undefined);
    }
    this.status.update({ phase: "stopped" });
  }

  private async offerFixes(message: string, command: string): Promise<void> {
    const copy = "Copy the command";
    const settings = "Open settings";
    const log = "Show log";
    const choice = await vscode.window.showErrorMessage(message, copy, settings, log);
    if (choice === copy) {
      await vscode.env.clipboard.writeText(command);
    } else if (choice === settings) {
      await vscode.commands.executeCommand("workbench.action.openSettings", "paperlens.interpreter");
    } else if (choice === log) {
      this.log.show();
    }
  }

  private showMessage(type: MessageType, message: string): void {
    const smoke = SMOKE_MESSAGE.exec(message);
    if (smoke) {
      const outcome = smoke[1] === "not made" ? "error" : (smoke[1] as "passed" | "failed");
      this.status.update({ smoke: { status: outcome, seconds: smoke[2] ? Number(smoke[2]) : undefined, message: smoke[3].replace(/^[:\s]+/, "") || undefined } });
    }
    if (type === MessageType.Error) void vscode.window.showErrorMessage(message);
    else if (type === MessageType.Warning) void vscode.window.showWarningMessage(message);
    else void vscode.window.showInformationMessage(message);
  }

  /** Runs one of the server's commands. */
  async execute(command: string, ...args: unknown[]): Promise<unknown> {
    const client = this.client;
    if (!client?.isRunning()) {
      void vscode.window.showWarningMessage("paperlens: the server is not running (see the paperlens log, or run “paperlens: Restart the server”)");
      return undefined;
    }
    return client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args });
  }

  private middleware(): Middleware {
    return {
      executeCommand: async (command, args, next) => {
        switch (command) {
          case OPEN_PAPER:
            return this.openPaper(args[0] as PaperLocation, () => next(command, args));
          case RUN_SMOKE:
            return this.runSmoke(() => next(command, args));
          case CHECK_WORKSPACE:
            return this.checkWorkspace(await next(command, args));
          case READINESS_REPORT:
            return this.readinessReport(await next(command, args));
          case EXPORT_QUESTIONS:
            return this.exportQuestions(await next(command, args));
          default:
            return next(command, args);
        }
      },
      provideHover: async (document, position, token, next) => {
        const hover = await next(document, position, token);
        return hover ? rewriteHover(hover) : hover;
      },
      handleWorkDoneProgress: (token, params, next) => {
        this.onProgress(token, params);
        next(token, params);
      },
      workspace: {
        configuration: async (params, token, next) => {
          const answers = await next(params, token);
          if (answers instanceof ResponseError || !Array.isArray(answers)) return answers;
          return params.items.map((item, i) => {
            if (item.section !== SECTION) return answers[i];
            const settings = this.settingsFor(item.scopeUri ? vscode.Uri.parse(item.scopeUri) : this.folder()?.uri);
            this.lastSettings = JSON.stringify(settings);
            return settings;
          });
        },
        // The server hears of a change once (VS Code's section also holds client-only settings,
        // and both the client's and the server's registration listen), with the settings mapped.
        didChangeConfiguration: async () => {
          const settings = this.settingsFor(this.folder()?.uri);
          const json = JSON.stringify(settings);
          if (json === this.lastSettings || !this.client) return;
          this.lastSettings = json;
          this.log.info(`settings changed: ${json}`);
          await this.client.sendNotification(DidChangeConfigurationNotification.type, { settings: { [SECTION]: settings } });
        },
      },
    };
  }

  private onProgress(token: string | number, params: WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd): void {
    if (params.kind === "begin") {
      this.progress.set(token, params.title);
      if (/smoke/i.test(params.title)) this.status.update({ smoke: { status: "running" } });
      else this.status.update({ phase: "indexing", progress: params.message });
    } else if (params.kind === "report") {
      const title = this.progress.get(token) ?? "";
      if (!/smoke/i.test(title)) this.status.update({ phase: "indexing", progress: params.message });
    } else {
      const title = this.progress.get(token) ?? "";
      this.progress.delete(token);
      if (/smoke/i.test(title) && params.message === "cancelled") this.status.update({ smoke: { status: "cancelled" } });
      if (![...this.progress.values()].some((t) => !/smoke/i.test(t))) this.status.update({ phase: "ready", progress: undefined });
      if (!/smoke/i.test(title)) this.refreshCodeLenses();
    }
  }

  /** The lenses name the paper's equations and carry their places: after the paper was read
   * again (another file, a PDF instead of its source), they are asked for again. */
  private refreshCodeLenses(): void {
    const feature = this.client?.getFeature(CodeLensRequest.method);
    if (!feature) return;
    for (const editor of vscode.window.visibleTextEditors) {
      feature.getProvider(editor.document)?.onDidChangeCodeLensEmitter.fire();
    }
  }

  // -- what the commands show -------------------------------------------------------------------

  /** The paper view at a place (a Location dict as the server gives it). */
  async openPaper(location: PaperLocation | undefined, fallback?: () => Promise<unknown>): Promise<boolean> {
    if (!location || typeof location.file !== "string") {
      void vscode.window.showWarningMessage("paperlens: no place in the paper to open");
      return false;
    }
    let view: unknown;
    try {
      view = await this.execute(PAPER_VIEW, location);
    } catch (err) {
      this.log.warn(`paperlens.paperView failed (${err}); opening the paper through the server`);
      return Boolean(fallback ? await fallback() : false);
    }
    if (!isPaperView(view)) {
      void vscode.window.showWarningMessage(`paperlens: the paper cannot be shown at ${location.file}${location.page ? ` p.${location.page}` : ""}`);
      return false;
    }
    await this.panel.show(view);
    return true;
  }

  /** “Open the paper” from the palette: the paper place under the cursor (an anchor such as
   * `Eq. (3)`, or a value the paper states). */
  async openPaperAtCursor(): Promise<boolean> {
    const editor = vscode.window.activeTextEditor;
    if (!editor) {
      void vscode.window.showInformationMessage("paperlens: put the cursor on an anchor such as Eq. (3), or click a code lens “Implements …”");
      return false;
    }
    const { document, selection } = editor;
    const links = (await vscode.commands.executeCommand<vscode.DocumentLink[]>("vscode.executeLinkProvider", document.uri)) ?? [];
    const link = links.find((l) => l.range.contains(selection.active) && l.target);
    let location = link?.target ? paperLinkLocation(link.target.toString(true)) : undefined;
    if (!location) {
      const found = (await vscode.commands.executeCommand<(vscode.Location | vscode.LocationLink)[]>("vscode.executeDefinitionProvider", document.uri, selection.active)) ?? [];
      for (const item of found) {
        const uri = "targetUri" in item ? item.targetUri : item.uri;
        const range = "targetUri" in item ? (item.targetSelectionRange ?? item.targetRange) : item.range;
        if (/\.(tex|md)$/i.test(uri.fsPath)) {
          location = { file: uri.fsPath, line: range.start.line, column: range.start.character };
          break;
        }
      }
    }
    if (!location) {
      void vscode.window.showInformationMessage("paperlens: nothing here points into the paper; put the cursor on an anchor such as Eq. (3)");
      return false;
    }
    if (location.line !== undefined) {
      await showSource(vscode.Uri.file(location.file), location.line, location.column ?? 0);
      return true;
    }
    return this.openPaper(location);
  }

  private async runSmoke(next: () => Promise<unknown>): Promise<unknown> {
    if (!vscode.workspace.isTrusted) {
      void vscode.window.showWarningMessage("paperlens: smoke runs are off in an untrusted workspace (they run the workspace's code)");
      return null;
    }
    this.status.update({ smoke: { status: "running" } });
    const result = await next();
    this.status.update({ smoke: smokeFromResult(result) });
    return result;
  }

  private checkWorkspace(result: unknown): unknown {
    const r = (result ?? {}) as { findings?: number; files?: number };
    if (typeof r.findings === "number") {
      const text = `paperlens: ${r.findings} finding${r.findings === 1 ? "" : "s"} in ${r.files ?? 0} file${r.files === 1 ? "" : "s"}`;
      void vscode.window.showInformationMessage(text, "Show Problems").then((choice) => {
        if (choice) void vscode.commands.executeCommand("workbench.actions.view.problems");
      });
    }
    return result;
  }

  private async readinessReport(result: unknown): Promise<unknown> {
    const markdown = (result as { markdown?: string } | undefined)?.markdown;
    if (typeof markdown === "string") {
      const document = await vscode.workspace.openTextDocument({ language: "markdown", content: markdown });
      await vscode.commands.executeCommand("markdown.showPreview", document.uri);
    }
    return result;
  }

  private async exportQuestions(result: unknown): Promise<unknown> {
    const r = (result ?? {}) as { markdown?: string; count?: number };
    if (typeof r.markdown === "string") {
      const document = await vscode.workspace.openTextDocument({ language: "markdown", content: r.markdown });
      await vscode.window.showTextDocument(document);
      if (!r.count) void vscode.window.showInformationMessage("paperlens: no open questions");
    }
    return result;
  }

  dispose(): void {
    void this.stop();
  }
}

/** PDF links in the server's hover open the paper view; the Markdown is trusted for that one command. */
export function rewriteHover(hover: vscode.Hover): vscode.Hover {
  let changed = false;
  const contents = hover.contents.map((content) => {
    if (!(content instanceof vscode.MarkdownString)) return content;
    const { markdown, rewritten } = rewriteHoverMarkdown(content.value);
    if (rewritten === 0) return content;
    changed = true;
    const trusted = new vscode.MarkdownString(markdown, content.supportThemeIcons);
    trusted.isTrusted = { enabledCommands: [SHOW_PAPER] };
    trusted.supportHtml = content.supportHtml;
    trusted.baseUri = content.baseUri;
    return trusted;
  });
  return changed ? new vscode.Hover(contents, hover.range) : hover;
}
