/**
 * The app's router: paths matched against the routes of routes.tsx with `:name` parameters, links that push history
 * entries, and the back button. No page reloads between pages; a reload of any page's path gets index.html from the
 * server (server/web) and lands on the same page.
 */
import { createContext, useContext, useEffect, useState, type AnchorHTMLAttributes, type MouseEvent, type ReactNode } from "react";

export interface Location {
  pathname: string;
  search: URLSearchParams;
}

const current = (): Location => ({ pathname: window.location.pathname, search: new URLSearchParams(window.location.search) });
const LocationContext = createContext<Location>(current());

/** Goes to `to` (a path with an optional query) without reloading. */
export function navigate(to: string, options: { replace?: boolean } = {}) {
  if (options.replace) window.history.replaceState(null, "", to);
  else window.history.pushState(null, "", to);
  window.dispatchEvent(new PopStateEvent("popstate"));
  if (!options.replace) window.scrollTo(0, 0);
}

export function RouterProvider({ children }: { children: ReactNode }) {
  const [location, setLocation] = useState(current);
  useEffect(() => {
    const update = () => setLocation(current());
    window.addEventListener("popstate", update);
    return () => window.removeEventListener("popstate", update);
  }, []);
  return <LocationContext.Provider value={location}>{children}</LocationContext.Provider>;
}

export const useLocation = () => useContext(LocationContext);

/** The parameters of `pattern` (`/tasks/:taskHash`) in `pathname`, or undefined when it does not match. */
export function matchPath(pattern: string, pathname: string): Record<string, string> | undefined {
  const want = pattern.split("/").filter(Boolean);
  const have = pathname.split("/").filter(Boolean);
  if (want.length !== have.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const part = want[i]!;
    const value = have[i]!;
    if (part.startsWith(":")) {
      try {
        params[part.slice(1)] = decodeURIComponent(value);
      } catch {
        return undefined;
      }
    } else if (part !== value) return undefined;
  }
  return params;
}

/** An <a> that changes page without reloading (a modified click opens a tab as usual). */
export function Link({ to, children, ...rest }: { to: string; children: ReactNode } & Omit<AnchorHTMLAttributes<HTMLAnchorElement>, "href">) {
  const onClick = (event: MouseEvent<HTMLAnchorElement>) => {
    rest.onClick?.(event);
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(to);
  };
  return (
    <a {...rest} href={to} onClick={onClick}>
      {children}
    </a>
  );
}
