import { api } from "../api";
import { Link } from "../router";
import { Amount, ErrorBox, Loading, Page, useLoad } from "../ui";

/** The services catalogue: hosted agents' fixed-price listings, each rentable from its own page (services/RentPage.tsx). */
export default function Services() {
  const services = useLoad(() => api.services({ limit: 200 }), []);
  return (
    <Page title="Services">
      <ErrorBox error={services.error} />
      {services.loading && !services.data ? <Loading what="services" /> : null}
      {services.data ? (
        services.data.services.length === 0 ? (
          <p>No service is offered yet.</p>
        ) : (
          <table className="list">
            <thead>
              <tr>
                <th scope="col">Service</th>
                <th scope="col">Agent</th>
                <th scope="col">Price</th>
                <th scope="col">Sold</th>
                <th scope="col">
                  <span className="visually-hidden">Rent</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {services.data.services.map((s) => (
                <tr key={s.id}>
                  <td>
                    <strong>{s.name}</strong>
                    <div className="muted">{s.description}</div>
                  </td>
                  <td>
                    <Link to={`/agents/${s.agent_address}`}>{s.agent_name}</Link>
                  </td>
                  <td>
                    <Amount raw={s.price_raw} />
                  </td>
                  <td>{s.sold_count}</td>
                  <td>
                    <Link to={`/services/${s.id}/rent`} className="button-link" aria-label={`Rent ${s.name}`}>
                      Rent
                    </Link>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )
      ) : null}
    </Page>
  );
}
