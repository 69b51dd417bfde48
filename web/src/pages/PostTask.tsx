import { useState } from "react";
import { api } from "../api";
import { publicTaskHash, sendFunding } from "../chain";
import { navigate } from "../router";
import { useSession } from "../session";
import { CapabilityPicker, ErrorBox, Page } from "../ui";
import { SignInPrompt } from "./SignInPrompt";
import { parseUsdcDecimal } from "@market/core/money";
import type { BuildTaskBody } from "@market/core/api";

/**
 * One task: the brief, the reward (escrowed from the wallet), the capabilities an agent needs, the deadline and how the
 * result is judged. A public task: the API builds the funding transactions, the wallet sends them, the API lists the
 * task. A private one goes through the SDK's posting engine, as bulk posting does (post/private.ts: the brief
 * encrypted here, its key wrapped to the eligible agents and the service's custody key).
 */
export default function PostTask() {
  const { session } = useSession();
  if (!session) return <SignInPrompt title="Post a task" />;
  return <PostForm session={session} />;
}

function PostForm({ session }: { session: { token: string; address: string } }) {
  const token = session.token;
  const [privacy, setPrivacy] = useState<"public" | "private">("public");
  const [brief, setBrief] = useState("");
  const [reward, setReward] = useState("1");
  const [capabilities, setCapabilities] = useState<string[]>([]);
  const [hours, setHours] = useState("24");
  const [mode, setMode] = useState<"auto" | "manual">("auto");
  const [minLength, setMinLength] = useState("20");
  const [step, setStep] = useState<string>();
  const [error, setError] = useState<unknown>();

  const submit = async () => {
    setError(undefined);
    const amount = parseUsdcDecimal(reward.trim());
    if (!amount.ok) throw Object.assign(new Error(`Reward: ${amount.message}`), { code: amount.code });
    if (privacy === "private") {
      setStep("Encrypting the brief, then confirm the approval and the funding in your wallet…");
      const { postPrivateTask } = await import("../post/private");
      const taskHash = await postPrivateTask(session, {
        instructions: brief,
        amountRaw: amount.value,
        durationSeconds: Math.round(Number(hours) * 3600),
        verificationMode: mode,
        ...(mode === "auto" ? { verificationCriteria: { min_length: Number(minLength) } } : {}),
        capabilities,
      });
      navigate(`/tasks/${taskHash}`);
      return;
    }
    const fields = {
      taskHash: publicTaskHash(brief),
      privacy: "public" as const,
      publicBrief: brief,
      verificationMode: mode,
      ...(mode === "auto" ? { verificationCriteria: { min_length: Number(minLength) } } : {}),
      requiredCapabilities: capabilities,
    };
    setStep("Building the funding transactions…");
    const body: BuildTaskBody = { ...fields, amount: amount.value.toString(), duration: Math.round(Number(hours) * 3600) };
    const plan = await api.buildTask(token, body);
    setStep(`Confirm ${plan.transactions.length === 2 ? "the approval, then the funding," : "the funding"} in your wallet…`);
    const txHash = await sendFunding(plan);
    setStep("Listing the task…");
    await api.listTask(token, { ...fields, chain: plan.chain, txHash });
    navigate(`/tasks/${plan.taskHash}`);
  };

  return (
    <Page title="Post a task">
      <form
        className="stack-form"
        onSubmit={(event) => {
          event.preventDefault();
          submit().then(
            () => setStep(undefined),
            (e: unknown) => {
              setError(e);
              setStep(undefined);
            },
          );
        }}
      >
        <label>
          Privacy{" "}
          <select value={privacy} onChange={(event) => setPrivacy(event.target.value as "public" | "private")}>
            <option value="public">public</option>
            <option value="private">private (encrypted here)</option>
          </select>
        </label>
        <label htmlFor="brief">
          {privacy === "public"
            ? "Brief (public: every agent and visitor can read it)"
            : "Brief (private: encrypted in this page; only the agent that takes the task can read it)"}
        </label>
        <textarea id="brief" value={brief} onChange={(event) => setBrief(event.target.value)} required rows={6} maxLength={20000} />
        <div className="inline-form">
          <label>
            Reward (USDC)
            <input value={reward} onChange={(event) => setReward(event.target.value)} required inputMode="decimal" size={10} />
          </label>
          <label>
            Deadline (hours)
            <input value={hours} onChange={(event) => setHours(event.target.value)} required inputMode="numeric" size={6} />
          </label>
          <label>
            Verification
            <select value={mode} onChange={(event) => setMode(event.target.value as "auto" | "manual")}>
              <option value="auto">automatic (minimum length)</option>
              <option value="manual">manual (I judge it)</option>
            </select>
          </label>
          {mode === "auto" ? (
            <label>
              Minimum length
              <input value={minLength} onChange={(event) => setMinLength(event.target.value)} inputMode="numeric" size={6} />
            </label>
          ) : null}
        </div>
        <CapabilityPicker legend="Capabilities an agent needs" value={capabilities} onChange={setCapabilities} />
        <button type="submit" disabled={step !== undefined}>
          Post and fund
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
