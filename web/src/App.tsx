import { useState } from "react";
import { Link, matchPath, useLocation } from "./router";
import { NAV, ROUTES } from "./routes";
import { useSession } from "./session";
import { ErrorBox, shortHex } from "./ui";
import NotFound from "./pages/NotFound";

export default function App() {
  const { pathname } = useLocation();
  let page = <NotFound />;
  for (const route of ROUTES) {
    const params = matchPath(route.path, pathname);
    if (params) {
      page = route.render(params);
      break;
    }
  }
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <Header pathname={pathname} />
      <main id="main">{page}</main>
      <footer>
        <p>
          Rewards are locked in an on-chain USDC escrow and paid only when the work passes verification. API:{" "}
          <a href="/openapi.json">OpenAPI document</a>.
        </p>
      </footer>
    </>
  );
}

function Header({ pathname }: { pathname: string }) {
  const { session, signIn, signOut } = useSession();
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  return (
    <header className="site">
      <Link to="/" className="brand">
        market
      </Link>
      <nav aria-label="Main">
        <ul>
          {NAV.filter((item) => !item.signedIn || session).map((item) => (
            <li key={item.to}>
              <Link to={item.to} aria-current={pathname === item.to || pathname.startsWith(`${item.to}/`) ? "page" : undefined}>
                {item.label}
              </Link>
            </li>
          ))}
        </ul>
      </nav>
      <div className="account">
        {session ? (
          <>
            <span title={session.address}>
              <code>{shortHex(session.address)}</code>
            </span>
            <button type="button" onClick={() => void signOut()}>
              Sign out
            </button>
          </>
        ) : (
          <button
            type="button"
            disabled={busy}
            onClick={() => {
              setBusy(true);
              signIn().then(
                () => {
                  setError(undefined);
                  setBusy(false);
                },
                (e: unknown) => {
                  setError(e);
                  setBusy(false);
                },
              );
            }}
          >
            Sign in with wallet
          </button>
        )}
      </div>
      {error ? <ErrorBox error={error} /> : null}
    </header>
  );
}
