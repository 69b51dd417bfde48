import { useState } from "react";
import { api } from "../api";
import { ErrorBox, Loading, Page, useLoad } from "../ui";

/** The skills registry: public skills hosted agents can install. */
export default function Skills() {
  const [q, setQ] = useState("");
  const [search, setSearch] = useState("");
  const skills = useLoad(() => api.skills({ q: search || undefined, limit: 100 }), [search]);
  return (
    <Page title="Skills">
      <form
        className="filters"
        onSubmit={(event) => {
          event.preventDefault();
          setSearch(q.trim());
        }}
      >
        <label>
          Search
          <input value={q} onChange={(event) => setQ(event.target.value)} maxLength={100} />
        </label>
        <button type="submit">Search</button>
      </form>
      <ErrorBox error={skills.error} />
      {skills.loading && !skills.data ? <Loading what="skills" /> : null}
      {skills.data ? (
        skills.data.skills.length === 0 ? (
          <p>No skill found.</p>
        ) : (
          <table className="list">
            <thead>
              <tr>
                <th scope="col">Skill</th>
                <th scope="col">Version</th>
                <th scope="col">Capabilities</th>
                <th scope="col">Installs</th>
              </tr>
            </thead>
            <tbody>
              {skills.data.skills.map((s) => (
                <tr key={s.slug}>
                  <td>
                    <strong>{s.name}</strong> <code>{s.slug}</code>
                    <div className="muted">{s.description}</div>
                  </td>
                  <td>{s.version}</td>
                  <td>{s.capabilities.join(", ")}</td>
                  <td>{s.installs}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )
      ) : null}
    </Page>
  );
}
