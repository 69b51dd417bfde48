/** Small pieces every page uses: loading data, showing an error in words with its code, amounts, times, statuses. */
import { useCallback, useEffect, useState, type ReactNode } from "react";
import { ERROR_CODES, isErrorCode } from "@market/core/errors";
import { formatDecimalAmount } from "@market/core/money";
import { CAPABILITIES } from "./constants";

/** What a failure shows: the code, the API's message, and the code table's description of it. */
export function describeError(error: unknown): { code: string; message: string; description?: string } {
  const e = error as { code?: unknown; message?: unknown };
  const code = typeof e?.code === "string" ? e.code : "CLIENT_ERROR";
  const message = typeof e?.message === "string" ? e.message : String(error);
  const description = isErrorCode(code) ? ERROR_CODES[code].description : undefined;
  return { code, message, ...(description && description !== message ? { description } : {}) };
}

export function ErrorBox({ error }: { error: unknown }) {
  if (error === undefined || error === null) return null;
  const { code, message, description } = describeError(error);
  return (
    <div className="error" role="alert">
      <strong>
        Error <code>{code}</code>
      </strong>
      : {message}
      {description ? <div className="muted">{description}</div> : null}
    </div>
  );
}

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload(): void;
}

/** Loads `load()` when a dependency changes; a later answer replaces an earlier one, never the reverse. */
export function useLoad<T>(load: () => Promise<T>, deps: readonly unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let current = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => current && setState({ data, loading: false }),
      (error: unknown) => current && setState({ error, loading: false }),
    );
    return () => {
      current = false;
    };
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}

export function Amount({ raw, decimals = 6, symbol = "USDC" }: { raw: string | bigint; decimals?: number; symbol?: string }) {
  return (
    <span className="amount">
      {formatDecimalAmount(BigInt(raw), decimals)} {symbol}
    </span>
  );
}

export const formatTime = (ms: number) => new Date(ms).toISOString().replace("T", " ").slice(0, 16) + " UTC";

export function Status({ status }: { status: string }) {
  return <span className={`status status-${status}`}>{status.replace(/_/g, " ")}</span>;
}

export const shortHex = (hex: string) => (hex.length > 14 ? `${hex.slice(0, 8)}…${hex.slice(-4)}` : hex);

export function Loading({ what }: { what: string }) {
  return (
    <p className="muted" aria-live="polite">
      Loading {what}…
    </p>
  );
}

export function Page({ title, children, actions }: { title: string; children: ReactNode; actions?: ReactNode }) {
  useEffect(() => {
    document.title = `${title} · market`;
  }, [title]);
  return (
    <section className="page">
      <header className="page-head">
        <h1>{title}</h1>
        {actions}
      </header>
      {children}
    </section>
  );
}

/** The capability tags as checkboxes in a fieldset: the known tags only (spec "Limits"), in their table's order. */
export function CapabilityPicker({
  legend,
  value,
  onChange,
}: {
  legend: string;
  value: readonly string[];
  onChange: (update: (list: string[]) => string[]) => void;
}) {
  return (
    <fieldset>
      <legend>{legend}</legend>
      <div className="tag-grid">
        {CAPABILITIES.map((tag) => (
          <label key={tag}>
            <input
              type="checkbox"
              checked={value.includes(tag)}
              onChange={(e) => onChange((list) => (e.target.checked ? [...list, tag] : list.filter((t) => t !== tag)))}
            />
            {tag}
          </label>
        ))}
      </div>
    </fieldset>
  );
}
