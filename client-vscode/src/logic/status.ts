// The status bar item's text and tooltip. Plain logic: no `vscode` import.

export type Phase = "starting" | "indexing" | "ready" | "stopped" | "failed";

export interface SmokeState {
  status: "running" | "passed" | "failed" | "error" | "cancelled";
  failures?: number;
  seconds?: number;
  message?: string;
}

export interface StatusState {
  phase: Phase;
  /** The running work-done progress's message (indexing the workspace: 120/500 files). */
  progress?: string;
  counts: { error: number; warning: number; info: number; hint: number };
  smoke?: SmokeState;
  interpreter?: string;
  problem?: string;
  untrusted?: boolean;
}

function smokeText(smoke: SmokeState): string {
  switch (smoke.status) {
    case "running":
      return "$(loading~spin) smoke";
    case "passed":
      return "$(pass) smoke";
    case "failed":
      return `$(error) smoke${smoke.failures ? ` ${smoke.failures}` : ""}`;
    case "error":
      return "$(warning) smoke not run";
    default:
      return "smoke cancelled";
  }
}

/** `$(book) paperlens $(warning) 4 $(info) 2 · $(pass) smoke`, and what the tooltip says. */
export function statusText(state: StatusState): { text: string; tooltip: string } {
  const lines: string[] = [];
  let text: string;
  switch (state.phase) {
    case "starting":
      text = "$(loading~spin) paperlens";
      lines.push("paperlens: starting the server");
      break;
    case "indexing":
      text = "$(sync~spin) paperlens: indexing…";
      lines.push(`paperlens: ${state.progress || "reading the paper"}`);
      break;
    case "stopped":
      text = "$(circle-slash) paperlens";
      lines.push("paperlens: the server is stopped");
      break;
    case "failed":
      text = "$(error) paperlens";
      lines.push(state.problem || "paperlens: the server could not start");
      break;
    default: {
      const { error, warning, info, hint } = state.counts;
      const parts = [error ? `$(error) ${error}` : "", warning ? `$(warning) ${warning}` : "", info + hint ? `$(info) ${info + hint}` : ""].filter(Boolean);
      text = `$(book) paperlens ${parts.length ? parts.join(" ") : "$(check)"}`;
      lines.push(`paperlens: ready — ${error} errors, ${warning} warnings, ${info + hint} notes against the paper in open files`);
    }
  }
  if (state.smoke) {
    text += ` · ${smokeText(state.smoke)}`;
    const took = state.smoke.seconds !== undefined ? ` in ${state.smoke.seconds.toFixed(1)} s` : "";
    lines.push(`last smoke run: ${state.smoke.message || state.smoke.status + took}`);
  }
  if (state.untrusted) lines.push("untrusted workspace: smoke runs and the LLM are off");
  if (state.interpreter) lines.push(`server: ${state.interpreter} -m paperlens.server`);
  return { text, tooltip: lines.join("\n") };
}

/** The smoke state from `paperlens.runSmoke`'s answer (the SmokeResult JSON, or null). */
export function smokeFromResult(result: unknown): SmokeState {
  if (typeof result !== "object" || result === null) return { status: "cancelled" };
  const r = result as { status?: string; failures?: unknown[]; duration_seconds?: number; durationSeconds?: number; message?: string };
  const seconds = r.duration_seconds ?? r.durationSeconds;
  const status = r.status === "passed" || r.status === "failed" ? r.status : "error";
  return { status, failures: Array.isArray(r.failures) ? r.failures.length : undefined, seconds: typeof seconds === "number" ? seconds : undefined, message: r.message || undefined };
}
