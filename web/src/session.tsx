/**
 * The signed-in session (a 24 h token from POST /api/v1/auth/verify), kept in this browser's localStorage so a reload
 * keeps it, and dropped when it expires, on sign-out, or when the API answers INVALID_TOKEN.
 */
import { createContext, useCallback, useContext, useMemo, useState, type ReactNode } from "react";
import type { Session } from "@market/core/api";
import { api } from "./api";
import { signInWithWallet } from "./wallet";

const KEY = "market.session";

function stored(): Session | undefined {
  try {
    const session = JSON.parse(window.localStorage.getItem(KEY) ?? "null") as Session | null;
    return session && session.expiresAt > Date.now() ? session : undefined;
  } catch {
    return undefined;
  }
}

interface SessionState {
  session: Session | undefined;
  signIn(): Promise<Session>;
  signOut(): Promise<void>;
  /** Forgets the session without asking the API (it was refused: revoked or expired). */
  forget(): void;
}

const SessionContext = createContext<SessionState | undefined>(undefined);

export function SessionProvider({ children }: { children: ReactNode }) {
  const [session, setSession] = useState<Session | undefined>(stored);
  const forget = useCallback(() => {
    window.localStorage.removeItem(KEY);
    setSession(undefined);
  }, []);
  const signIn = useCallback(async () => {
    const next = await signInWithWallet();
    window.localStorage.setItem(KEY, JSON.stringify(next));
    setSession(next);
    return next;
  }, []);
  const signOut = useCallback(async () => {
    const token = session?.token;
    forget();
    if (token) await api.logout(token).catch(() => undefined);
  }, [session, forget]);
  const value = useMemo(() => ({ session, signIn, signOut, forget }), [session, signIn, signOut, forget]);
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

export function useSession(): SessionState {
  const state = useContext(SessionContext);
  if (!state) throw new Error("useSession outside SessionProvider");
  return state;
}
