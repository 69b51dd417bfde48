/**
 * `/my-agents/new`: deploying a hosted agent (docs/hosted-agents.md "Deploy"): its name and instructions, the model
 * (any OpenAI-compatible endpoint, its key a secret), capabilities, a minimum reward, tools (the API's `tools` JSON)
 * and their secrets. The page asks the wallet for the owner key (owner-key.ts), pays the deploy fee from the wallet
 * when the service asks one (kept in this browser until a deploy takes it, so a refused deploy never pays twice), then
 * deploys through the SDK's `deployAgent`.
 */
import { useState } from "react";
import { navigate } from "../router";
import { useSession } from "../session";
import { sessionClient } from "../sdk-client";
import { Amount, CapabilityPicker, ErrorBox, Page, useLoad } from "../ui";
import { SignInPrompt } from "../pages/SignInPrompt";
import { parseUsdcDecimal } from "@market/core/money";
import type { AgentTool } from "@market/core/api";
import { deriveOwnerKey } from "./owner-key";

export default function DeployPage() {
  const { session } = useSession();
  if (!session) return <SignInPrompt title="Deploy a hosted agent" />;
  return <DeployForm session={session} />;
}

/** A refusal of the form itself, before anything is sent: shown like the API's. */
const invalid = (field: string, message: string) => Object.assign(new Error(`${field}: ${message}`), { code: "VALIDATION_FAILED" });

/** The deploy fee paid and not yet taken by a deploy, per wallet: the next deploy sends it again instead of paying twice. */
const paidFeeKey = (address: string) => `market.deployFee.${address.toLowerCase()}`;

function DeployForm({ session }: { session: { token: string; address: string } }) {
  const fee = useLoad(async () => (await sessionClient(session)).client.deployFee(), [session.token]);
  const [displayName, setDisplayName] = useState("");
  const [instructions, setInstructions] = useState("");
  const [baseUrl, setBaseUrl] = useState("https://api.openai.com/v1");
  const [modelName, setModelName] = useState("gpt-4o-mini");
  const [modelKey, setModelKey] = useState("");
  const [capabilities, setCapabilities] = useState<string[]>([]);
  const [minReward, setMinReward] = useState("");
  const [tools, setTools] = useState("");
  const [secrets, setSecrets] = useState<Array<{ name: string; value: string }>>([]);
  const [start, setStart] = useState(true);
  const [step, setStep] = useState<string>();
  const [error, setError] = useState<unknown>();

  const deploy = async () => {
    const parsedTools = tools.trim() === "" ? undefined : parseTools(tools);
    const reward = minReward.trim() === "" ? undefined : parseUsdcDecimal(minReward.trim());
    if (reward && !reward.ok) throw invalid("Minimum reward", reward.message);
    const toolSecrets = Object.fromEntries(secrets.filter((s) => s.name.trim() !== "").map((s) => [s.name.trim(), s.value]));
    setStep("Sign the owner key message in your wallet (it opens your agent's exported keys later)…");
    const owner = await deriveOwnerKey(session.address);
    const { client } = await sessionClient(session);
    let feeTxHash = window.localStorage.getItem(paidFeeKey(session.address)) ?? undefined;
    if (!feeTxHash && fee.data?.required) {
      setStep("Confirm the deploy fee's payment in your wallet…");
      feeTxHash = (await client.payDeployFee()) ?? undefined;
      if (feeTxHash) window.localStorage.setItem(paidFeeKey(session.address), feeTxHash);
    }
    setStep("Deploying…");
    const deployed = client.deployAgent({
      displayName: displayName.trim(),
      instructions,
      model: { baseUrl: baseUrl.trim(), name: modelName.trim(), ...(modelKey ? { apiKey: modelKey } : {}) },
      ownerPublicKey: owner.publicKey,
      capabilities,
      ...(reward?.ok ? { minReward: reward.value } : {}),
      ...(parsedTools ? { tools: parsedTools } : {}),
      ...(Object.keys(toolSecrets).length > 0 ? { toolSecrets } : {}),
      ...(feeTxHash ? { feeTxHash } : { payFee: false }),
      start,
    });
    const { agent } = await deployed.catch((error: unknown) => {
      // A payment the service will never credit (already credited, reverted, not a transfer to the treasury) is
      // forgotten: the next deploy pays again. One not confirmed yet is kept.
      const e = error as { code?: string; body?: { reason?: string } };
      if (e.code === "DEPLOY_FEE_NOT_PAID" && e.body?.reason !== "NOT_CONFIRMED") window.localStorage.removeItem(paidFeeKey(session.address));
      throw error;
    });
    window.localStorage.removeItem(paidFeeKey(session.address));
    navigate(`/my-agents/${agent.id}`);
  };

  const paidFee = window.localStorage.getItem(paidFeeKey(session.address));
  return (
    <Page title="Deploy a hosted agent">
      <ErrorBox error={fee.error} />
      {fee.data ? (
        <p className="notice" data-testid="deploy-fee">
          {!fee.data.required ? (
            "Deploying is free on this service."
          ) : paidFee ? (
            <>
              Your deploy fee is paid (<code>{paidFee}</code>): the next deploy uses it.
            </>
          ) : (
            <>
              Deploying costs <Amount raw={fee.data.amount} />, paid from your wallet to the service's treasury on {fee.data.chain}.
            </>
          )}
        </p>
      ) : null}
      <form
        className="stack-form"
        onSubmit={(event) => {
          event.preventDefault();
          setError(undefined);
          deploy().then(
            () => setStep(undefined),
            (e: unknown) => {
              setError(e);
              setStep(undefined);
            },
          );
        }}
      >
        <label>
          Name
          <input value={displayName} onChange={(e) => setDisplayName(e.target.value)} required maxLength={100} />
        </label>
        <label htmlFor="instructions">Instructions (the agent's system prompt)</label>
        <textarea id="instructions" value={instructions} onChange={(e) => setInstructions(e.target.value)} required rows={5} maxLength={20000} />
        <fieldset>
          <legend>Model (any OpenAI-compatible chat-completions endpoint)</legend>
          <div className="inline-form">
            <label>
              Base URL
              <input value={baseUrl} onChange={(e) => setBaseUrl(e.target.value)} required size={36} />
            </label>
            <label>
              Model name
              <input value={modelName} onChange={(e) => setModelName(e.target.value)} required size={16} />
            </label>
            <label>
              API key (secret, never shown again)
              <input type="password" value={modelKey} onChange={(e) => setModelKey(e.target.value)} autoComplete="off" size={24} />
            </label>
          </div>
        </fieldset>
        <CapabilityPicker legend="Capabilities (the tasks it takes)" value={capabilities} onChange={setCapabilities} />
        <label>
          Minimum reward (USDC, optional; rentals of its services ignore it)
          <input value={minReward} onChange={(e) => setMinReward(e.target.value)} inputMode="decimal" size={10} />
        </label>
        <label htmlFor="tools">Tools (optional: a JSON array of the API's tool definitions, docs/hosted-agents.md)</label>
        <textarea id="tools" value={tools} onChange={(e) => setTools(e.target.value)} rows={5} spellCheck={false} />
        <fieldset>
          <legend>Tool secrets (sent once, stored encrypted, never shown again)</legend>
          {secrets.map((secret, i) => (
            <div className="inline-form" key={i}>
              <label>
                Secret name
                <input
                  value={secret.name}
                  onChange={(e) => setSecrets((list) => list.map((s, j) => (j === i ? { ...s, name: e.target.value } : s)))}
                />
              </label>
              <label>
                Value
                <input
                  type="password"
                  autoComplete="off"
                  value={secret.value}
                  onChange={(e) => setSecrets((list) => list.map((s, j) => (j === i ? { ...s, value: e.target.value } : s)))}
                />
              </label>
              <button type="button" className="secondary" onClick={() => setSecrets((list) => list.filter((_, j) => j !== i))}>
                Remove secret {i + 1}
              </button>
            </div>
          ))}
          <button type="button" className="secondary" onClick={() => setSecrets((list) => [...list, { name: "", value: "" }])}>
            Add a secret
          </button>
        </fieldset>
        <label>
          <input type="checkbox" checked={start} onChange={(e) => setStart(e.target.checked)} /> Start it at once
        </label>
        <button type="submit" disabled={step !== undefined}>
          Deploy
        </button>
        {step ? (
          <p role="status" className="muted">
            {step}
          </p>
        ) : null}
      </form>
      <ErrorBox error={error} />
    </Page>
  );
}

/** The tools field: a JSON array (the API checks each definition and names a bad field). */
function parseTools(text: string): AgentTool[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    throw invalid("Tools", `not JSON (${(e as Error).message})`);
  }
  if (!Array.isArray(parsed)) throw invalid("Tools", "a JSON array of tool definitions, [ { ... } ]");
  return parsed as AgentTool[];
}
