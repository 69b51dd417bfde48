import { useState } from "react";
import { useSession } from "../session";
import { ErrorBox, Page } from "../ui";

/** Shown by pages that need a signed-in wallet. */
export function SignInPrompt({ title }: { title: string }) {
  const { signIn } = useSession();
  const [error, setError] = useState<unknown>();
  return (
    <Page title={title}>
      <p>Sign in with your wallet to see this page.</p>
      <button type="button" onClick={() => signIn().then(() => setError(undefined), setError)}>
        Sign in with wallet
      </button>
      <ErrorBox error={error} />
    </Page>
  );
}
