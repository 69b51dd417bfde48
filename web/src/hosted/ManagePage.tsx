/**
 * `/my-agents/<id>`: one of the account's hosted agents (docs/hosted-agents.md): its state and wallet, start and stop,
 * update its settings (applied at its next start), export its wallet key (opened here with the owner key, only when
 * the owner asks), withdraw its earnings to the owner, and manage its services (ServicesPanel.tsx). Every call goes
 * through the SDK's client as the signed-in session; the API checks that the agent is this account's.
 */
import { useState, type ReactNode } from "react";
import { createPublicClient, custom, erc20Abi, getAddress, type Address } from "viem";
import { api } from "../api";
import { Link } from "../router";
import { useSession } from "../session";
import { sessionClient, settlementTerms } from "../sdk-client";
import { Amount, CapabilityPicker, ErrorBox, Loading, Page, formatTime, useLoad } from "../ui";
import { SignInPrompt } from "../pages/SignInPrompt";
import { formatUsdc, parseUsdcDecimal } from "@market/core/money";
import type { OwnedAgentView, Withdrawal } from "@market/core/api";
import { deriveOwnerKey } from "./owner-key";
import { ServicesPanel } from "./ServicesPanel";

type Session = { token: string; address: string };

export default function ManagePage({ agentId }: { agentId: string }) {
  const { session } = useSession();
  if (!session) return <SignInPrompt title="Hosted agent" />;
  return <Manage session={session} agentId={Number(agentId)} />;
}

/** Runs one action at a time, with its progress line and its error shown in words with its code. */
function useAction() {
  const [busy, setBusy] = useState<string>();
  const [error, setError] = useState<unknown>();
  const run = (what: string, action: () => Promise<unknown>) => {
    setBusy(what);
    setError(undefined);
    action().then(
      () => setBusy(undefined),
      (e: unknown) => {
        setError(e);
        setBusy(undefined);
      },
    );
  };
  const view = (
    <>
      {busy ? (
        <p role="status" className="muted">
          {busy}
        </p>
      ) : null}
      <ErrorBox error={error} />
    </>
  );
  return { busy, run, view };
}

function Manage({ session, agentId }: { session: Session; agentId: number }) {
  const agents = useLoad(() => api.myAgents(session.token), [session.token]);
  const agent = agents.data?.agents.find((a) => a.id === agentId);
  const balance = useLoad(() => (agent ? usdcBalance(agent.address) : Promise.resolve(undefined)), [agent?.address, agents.data]);
  const lifecycle = useAction();
  const lifecycleCall = (what: string, call: "startAgent" | "stopAgent") =>
    lifecycle.run(what, async () => {
      const { client } = await sessionClient(session);
      await client[call]({ agentId });
      agents.reload();
    });
  return (
    <Page title={agent?.displayName ?? "Hosted agent"} actions={<Link to="/my-agents">All your agents</Link>}>
      <ErrorBox error={agents.error} />
      {agents.loading && !agents.data ? <Loading what="the agent" /> : null}
      {agents.data && !agent ? <ErrorBox error={{ code: "HOSTED_AGENT_NOT_FOUND", message: `You have no hosted agent ${agentId}.` }} /> : null}
      {agent ? (
        <>
          <dl className="facts">
            <dt>State</dt>
            <dd>
              <span className={`status status-${agent.state}`} data-testid="agent-state">
                {agent.state}
              </span>
            </dd>
            <dt>Wallet</dt>
            <dd>
              <Link to={`/agents/${agent.address}`}>
                <code>{agent.address}</code>
              </Link>
            </dd>
            <dt>Balance</dt>
            <dd data-testid="agent-balance">
              {balance.data !== undefined ? <Amount raw={balance.data} /> : balance.error ? <ErrorBox error={balance.error} /> : "…"}
            </dd>
            <dt>Model</dt>
            <dd>
              {agent.model.name} at <code>{agent.modelBaseUrl}</code>
            </dd>
            <dt>Capabilities</dt>
            <dd>{agent.capabilities.join(", ") || "none"}</dd>
            <dt>Minimum reward</dt>
            <dd>{agent.minReward ? <Amount raw={agent.minReward} /> : "none"}</dd>
            <dt>Tools</dt>
            <dd>{[...agent.tools.map((t) => `${t.name} (${t.type})`), ...agent.builtinTools].join(", ") || "none"}</dd>
            <dt>Secrets held</dt>
            <dd data-testid="agent-secrets">{agent.secrets.map((s) => `${s.kind} ${s.name}`).join(", ")}</dd>
            <dt>Key exports</dt>
            <dd>{agent.exports === 0 ? "never exported" : `${agent.exports}, last ${formatTime(agent.exportedAt ?? 0)}`}</dd>
            {agent.lastError ? (
              <>
                <dt>Last error</dt>
                <dd>{agent.lastError}</dd>
              </>
            ) : null}
          </dl>
          <div className="actions">
            {agent.state === "stopped" ? (
              <button type="button" disabled={lifecycle.busy !== undefined} onClick={() => lifecycleCall("Starting…", "startAgent")}>
                Start
              </button>
            ) : (
              <button
                type="button"
                className="secondary"
                disabled={lifecycle.busy !== undefined}
                onClick={() => lifecycleCall("Stopping…", "stopAgent")}
              >
                Stop
              </button>
            )}
          </div>
          {lifecycle.view}
          <Section title="Withdraw">
            <WithdrawForm agent={agent} session={session} onDone={agents.reload} />
          </Section>
          <Section title="Export the wallet key">
            <ExportKey agent={agent} session={session} onDone={agents.reload} />
          </Section>
          <Section title="Settings">
            <UpdateForm agent={agent} session={session} onDone={agents.reload} />
          </Section>
          <Section title="Services">
            <ServicesPanel agentId={agentId} session={session} />
          </Section>
        </>
      ) : null}
    </Page>
  );
}

function Section({ title, children }: { title: string; children: ReactNode }) {
  const id = `section-${title.toLowerCase().replace(/[^a-z]+/g, "-")}`;
  return (
    <section className="panel" aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      {children}
    </section>
  );
}

/** The agent wallet's settlement-token balance, read through the browser wallet's provider. */
async function usdcBalance(address: string): Promise<bigint> {
  const { settlement } = await settlementTerms();
  if (!window.ethereum) return 0n;
  const reader = createPublicClient({ transport: custom(window.ethereum) });
  return reader.readContract({ address: settlement.token as Address, abi: erc20Abi, functionName: "balanceOf", args: [getAddress(address)] });
}

function WithdrawForm({ agent, session, onDone }: { agent: OwnedAgentView; session: Session; onDone(): void }) {
  const [amount, setAmount] = useState("");
  const [done, setDone] = useState<Withdrawal>();
  const action = useAction();
  const withdraw = async () => {
    const parsed = amount.trim() === "" ? undefined : parseUsdcDecimal(amount.trim());
    if (parsed && !parsed.ok) throw Object.assign(new Error(`Amount: ${parsed.message}`), { code: parsed.code });
    const { client } = await sessionClient(session);
    setDone(await client.withdrawFromAgent({ agentId: agent.id, ...(parsed?.ok ? { amountRaw: parsed.value } : {}) }));
    onDone();
  };
  return (
    <>
      <p className="muted">Sends the agent's USDC to your address ({session.address}). Stop the agent first.</p>
      <form
        className="inline-form"
        onSubmit={(event) => {
          event.preventDefault();
          setDone(undefined);
          action.run("Withdrawing…", withdraw);
        }}
      >
        <label>
          Amount (USDC; empty: all)
          <input value={amount} onChange={(e) => setAmount(e.target.value)} inputMode="decimal" size={10} />
        </label>
        <button type="submit" disabled={action.busy !== undefined}>
          Withdraw
        </button>
      </form>
      {done ? (
        <p role="status" data-testid="withdrawn">
          Withdrew {formatUsdc(BigInt(done.amount))} USDC to <code>{done.to}</code> (transaction <code>{done.txHash}</code>).
        </p>
      ) : null}
      {action.view}
    </>
  );
}

/**
 * The export: the owner key is derived from the wallet's signature (owner-key.ts) and checked to be the agent's owner
 * key before anything is asked of the API (every export is recorded, and an exported wallet is never gas-sponsored
 * again); the sealed key is opened here and shown until hidden.
 */
function ExportKey({ agent, session, onDone }: { agent: OwnedAgentView; session: Session; onDone(): void }) {
  const [key, setKey] = useState<string>();
  const action = useAction();
  const exportKey = async () => {
    const owner = await deriveOwnerKey(session.address);
    if (owner.publicKey.toLowerCase() !== agent.ownerPublicKey.replace(/^0x/, "").toLowerCase()) {
      throw Object.assign(
        new Error(
          "This agent's owner key is not this wallet's web owner key (it was deployed with the CLI or the SDK, or the wallet signs differently): export it with `market` or the SDK's exportAgentKey. Nothing was exported.",
        ),
        { code: "OWNER_KEY_MISMATCH" },
      );
    }
    const { client } = await sessionClient(session);
    const exported = await client.exportAgentKey({ agentId: agent.id, ownerPrivateKey: owner.privateKey });
    if (!exported.privateKey) throw Object.assign(new Error("The exported key did not open with the owner key."), { code: "OWNER_KEY_MISMATCH" });
    setKey(exported.privateKey);
    onDone();
  };
  return (
    <>
      <p className="muted">
        The key of the agent's wallet, opened here with your owner key (your wallet signs the owner key message). Each export is recorded, and an
        exported wallet is never given sponsored gas again.
      </p>
      {key ? (
        <>
          <code className="secret" data-testid="exported-key">
            {key}
          </code>
          <button type="button" className="secondary" onClick={() => setKey(undefined)}>
            Hide the key
          </button>
        </>
      ) : (
        <button
          type="button"
          disabled={action.busy !== undefined}
          onClick={() => action.run("Sign the owner key message in your wallet…", exportKey)}
        >
          Export the wallet key
        </button>
      )}
      {action.view}
    </>
  );
}

/** PATCH /api/v1/agents/{id}: applied at the agent's next start (a running agent keeps what it started with). */
function UpdateForm({ agent, session, onDone }: { agent: OwnedAgentView; session: Session; onDone(): void }) {
  const [displayName, setDisplayName] = useState(agent.displayName);
  const [instructions, setInstructions] = useState(agent.instructions);
  const [baseUrl, setBaseUrl] = useState(agent.modelBaseUrl);
  const [modelName, setModelName] = useState(agent.model.name);
  const [capabilities, setCapabilities] = useState<string[]>(agent.capabilities);
  const [saved, setSaved] = useState(false);
  const action = useAction();
  const save = async () => {
    const { client } = await sessionClient(session);
    await client.skills.updateAgent({
      agentId: agent.id,
      displayName: displayName.trim(),
      instructions,
      model: { baseUrl: baseUrl.trim(), name: modelName.trim() },
      capabilities,
    });
    setSaved(true);
    onDone();
  };
  return (
    <form
      className="stack-form"
      onSubmit={(event) => {
        event.preventDefault();
        setSaved(false);
        action.run("Saving…", save);
      }}
    >
      <p className="muted">Changes apply at the agent's next start; the model key and tool secrets stay those given at deploy.</p>
      <label>
        Name
        <input value={displayName} onChange={(e) => setDisplayName(e.target.value)} required maxLength={100} />
      </label>
      <label htmlFor="update-instructions">Instructions</label>
      <textarea id="update-instructions" value={instructions} onChange={(e) => setInstructions(e.target.value)} required rows={4} />
      <div className="inline-form">
        <label>
          Model base URL
          <input value={baseUrl} onChange={(e) => setBaseUrl(e.target.value)} required size={36} />
        </label>
        <label>
          Model name
          <input value={modelName} onChange={(e) => setModelName(e.target.value)} required size={16} />
        </label>
      </div>
      <CapabilityPicker legend="Capabilities" value={capabilities} onChange={setCapabilities} />
      <button type="submit" disabled={action.busy !== undefined}>
        Save settings
      </button>
      {saved ? <p role="status">Saved: applied at the agent's next start.</p> : null}
      {action.view}
    </form>
  );
}
