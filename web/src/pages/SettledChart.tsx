import { api } from "../api";
import { ErrorBox, useLoad } from "../ui";
import { formatDecimalAmount } from "@market/core/money";
import type { Address } from "@market/core/api";

const DAYS = 30;
const DAY_MS = 86_400_000;
/** Pages of the agent's tasks read for the chart (100 each): its latest 500 tasks at most. */
const PAGES = 5;

/** The agent's paid tasks (GET /api/v1/tasks?worker=…, those with a payout), newest first, from up to PAGES pages. */
async function paidTasks(address: string) {
  const tasks = [];
  let cursor: string | undefined;
  for (let page = 0; page < PAGES; page++) {
    const answer = await api.explore({ worker: address as Address, limit: "100", ...(cursor ? { cursor } : {}) });
    tasks.push(...answer.tasks.filter((task) => task.state.paid !== undefined));
    if (!answer.nextCursor) break;
    cursor = answer.nextCursor;
  }
  return tasks;
}

/**
 * A bar per day of the last 30: USDC the agent was paid for tasks listed that day (the task view dates a task by its
 * listing; its payout is `state.paid.worker`). Plain SVG, with the figures also as a table for screen readers.
 */
export function SettledChart({ address }: { address: string }) {
  const paid = useLoad(() => paidTasks(address), [address]);
  if (paid.error) return <ErrorBox error={paid.error} />;
  if (!paid.data) return null;
  const today = Math.floor(Date.now() / DAY_MS);
  const days = Array.from({ length: DAYS }, (_, i) => ({ day: today - DAYS + 1 + i, raw: 0n, count: 0 }));
  for (const task of paid.data) {
    const slot = days[Math.floor(task.meta.listedAt / DAY_MS) - (today - DAYS + 1)];
    if (!slot) continue;
    slot.raw += BigInt(task.state.paid?.worker ?? "0");
    slot.count += 1;
  }
  const total = days.reduce((sum, d) => sum + d.raw, 0n);
  const count = days.reduce((sum, d) => sum + d.count, 0);
  const max = days.reduce((m, d) => (d.raw > m ? d.raw : m), 0n);
  const width = 600;
  const height = 140;
  const bar = width / DAYS;
  const label = (day: number) => new Date(day * DAY_MS).toISOString().slice(5, 10);
  return (
    <figure className="chart">
      <svg viewBox={`0 0 ${width} ${height + 20}`} width="100%" role="img" aria-labelledby="settled-title">
        <title id="settled-title">{`Paid work over the last ${DAYS} days: ${count} tasks, ${formatDecimalAmount(total, 6)} USDC`}</title>
        <line x1="0" y1={height} x2={width} y2={height} stroke="currentColor" strokeWidth="1" />
        {days.map((d, i) => {
          const h = max === 0n ? 0 : (Number((d.raw * 1000n) / max) * (height - 10)) / 1000;
          return d.raw > 0n ? <rect key={d.day} className="bar" x={i * bar + 2} y={height - h} width={bar - 4} height={h} /> : null;
        })}
        {[0, Math.floor(DAYS / 2), DAYS - 1].map((i) => (
          <text key={i} x={i * bar + bar / 2} y={height + 15} textAnchor="middle">
            {label(days[i]!.day)}
          </text>
        ))}
      </svg>
      <figcaption>
        {count === 0
          ? "No paid task in the last 30 days."
          : `${count} paid ${count === 1 ? "task" : "tasks"}, ${formatDecimalAmount(total, 6)} USDC in the last 30 days (by listing day).`}
      </figcaption>
    </figure>
  );
}
