import { useState } from "react";
import { api } from "../api";
import type { CreatedApiKey } from "@market/core/api";
import { useSession } from "../session";
import { ErrorBox, Loading, Page, formatTime, useLoad } from "../ui";
import { SignInPrompt } from "./SignInPrompt";

/** Account settings: the account's API keys (create one, shown once; list; revoke one; revoke all). */
export default function Account() {
  const { session, forget } = useSession();
  if (!session) return <SignInPrompt title="Account settings" />;
  return <Keys token={session.token} address={session.address} onAllRevoked={forget} />;
}

function Keys({ token, address, onAllRevoked }: { token: string; address: string; onAllRevoked(): void }) {
  const keys = useLoad(() => api.listApiKeys(token), [token]);
  const [name, setName] = useState("");
  const [created, setCreated] = useState<CreatedApiKey>();
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const act = async (what: () => Promise<unknown>) => {
    setBusy(true);
    setError(undefined);
    try {
      await what();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Page title="Account settings">
      <p>
        Signed in as <code>{address}</code>.
      </p>
      <h2>API keys</h2>
      <p className="muted">A key acts as this wallet for the SDK, the market CLI and MCP clients. It is shown once, when created.</p>
      <form
        className="inline-form"
        onSubmit={(event) => {
          event.preventDefault();
          void act(async () => {
            setCreated(await api.createApiKey(token, name.trim()));
            setName("");
            keys.reload();
          });
        }}
      >
        <label>
          Name
          <input value={name} onChange={(event) => setName(event.target.value)} required maxLength={100} placeholder="laptop CLI" />
        </label>
        <button type="submit" disabled={busy}>
          Create API key
        </button>
      </form>
      {created ? (
        <div className="notice" role="status">
          <p>
            New key <strong>{created.name}</strong>: copy it now, it is never shown again.
          </p>
          <code className="secret" data-testid="new-api-key">
            {created.key}
          </code>
          <button type="button" onClick={() => setCreated(undefined)}>
            I have copied it
          </button>
        </div>
      ) : null}
      <ErrorBox error={error ?? keys.error} />
      {keys.loading && !keys.data ? <Loading what="keys" /> : null}
      {keys.data ? (
        <table className="list">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Prefix</th>
              <th scope="col">Created</th>
              <th scope="col">Last used</th>
              <th scope="col">State</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {keys.data.keys.map((key) => (
              <tr key={key.id}>
                <td>{key.name}</td>
                <td>
                  <code>{key.prefix}…</code>
                </td>
                <td>{formatTime(key.createdAt)}</td>
                <td>{key.lastUsedAt ? formatTime(key.lastUsedAt) : "never"}</td>
                <td>{key.revokedAt ? `revoked ${formatTime(key.revokedAt)}` : "active"}</td>
                <td>
                  {key.revokedAt ? null : (
                    <button
                      type="button"
                      disabled={busy}
                      aria-label={`Revoke ${key.name}`}
                      onClick={() =>
                        void act(async () => {
                          await api.revokeApiKey(token, key.id);
                          keys.reload();
                        })
                      }
                    >
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <h2>A key leaked?</h2>
      <p>Revoke every key of this account and end every signed-in session, this one included.</p>
      <button
        type="button"
        className="danger"
        disabled={busy}
        onClick={() => {
          if (!window.confirm("Revoke every API key and sign out everywhere?")) return;
          void act(async () => {
            await api.revokeAllApiKeys(token);
            onAllRevoked();
          });
        }}
      >
        Revoke all keys
      </button>
    </Page>
  );
}
