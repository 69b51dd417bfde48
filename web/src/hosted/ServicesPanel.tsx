/**
 * A hosted agent's services, managed by its owner (docs/services.md "Routes"): list them (inactive ones too), list a
 * new one (name, description, price, type), change a price, take one off sale or back, delete one. A new price applies
 * to rentals listed from then on; a deleted service's rentals stay pinned to the agent.
 */
import { useState } from "react";
import { sessionClient } from "../sdk-client";
import { Amount, ErrorBox, Loading, useLoad } from "../ui";
import { parseUsdcDecimal } from "@market/core/money";
import type { ServiceView } from "@market/core/api";

type Session = { token: string; address: string };

const usdc = (field: string, text: string): bigint => {
  const parsed = parseUsdcDecimal(text.trim());
  if (!parsed.ok) throw Object.assign(new Error(`${field}: ${parsed.message}`), { code: parsed.code });
  return parsed.value;
};

export function ServicesPanel({ agentId, session }: { agentId: number; session: Session }) {
  const services = useLoad(async () => (await sessionClient(session)).client.agentServices({ agentId }), [agentId, session.token]);
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const act = (action: () => Promise<unknown>) => {
    setBusy(true);
    setError(undefined);
    action().then(
      () => {
        setBusy(false);
        services.reload();
      },
      (e: unknown) => {
        setError(e);
        setBusy(false);
      },
    );
  };
  const client = async () => (await sessionClient(session)).client;
  return (
    <>
      <ErrorBox error={services.error} />
      {services.loading && !services.data ? <Loading what="the services" /> : null}
      {services.data ? (
        services.data.services.length === 0 ? (
          <p>This agent offers no service yet.</p>
        ) : (
          <table className="list" data-testid="agent-services">
            <thead>
              <tr>
                <th scope="col">Service</th>
                <th scope="col">Price</th>
                <th scope="col">On sale</th>
                <th scope="col">Sold</th>
                <th scope="col">Change</th>
              </tr>
            </thead>
            <tbody>
              {services.data.services.map((s) => (
                <ServiceRow
                  key={s.id}
                  service={s}
                  busy={busy}
                  onPrice={(price) => act(async () => (await client()).updateService({ agentId, serviceId: s.id, priceRaw: usdc("Price", price) }))}
                  onActive={(active) => act(async () => (await client()).updateService({ agentId, serviceId: s.id, active }))}
                  onDelete={() => act(async () => (await client()).deleteService({ agentId, serviceId: s.id }))}
                />
              ))}
            </tbody>
          </table>
        )
      ) : null}
      <NewService
        busy={busy}
        onCreate={(fields) =>
          act(async () =>
            (await client()).createService({
              agentId,
              name: fields.name,
              description: fields.description,
              serviceType: fields.serviceType,
              priceRaw: usdc("Price", fields.price),
            }),
          )
        }
      />
      <ErrorBox error={error} />
    </>
  );
}

function ServiceRow({
  service,
  busy,
  onPrice,
  onActive,
  onDelete,
}: {
  service: ServiceView;
  busy: boolean;
  onPrice(price: string): void;
  onActive(active: boolean): void;
  onDelete(): void;
}) {
  const [price, setPrice] = useState("");
  return (
    <tr>
      <td>
        <strong>{service.name}</strong> <span className="muted">({service.service_type})</span>
        <div className="muted">{service.description}</div>
      </td>
      <td>
        <Amount raw={service.price_raw} />
      </td>
      <td>{service.active ? "yes" : "no"}</td>
      <td>{service.sold_count}</td>
      <td>
        <form
          className="inline-form"
          onSubmit={(event) => {
            event.preventDefault();
            onPrice(price);
          }}
        >
          <label>
            New price (USDC)
            <input value={price} onChange={(e) => setPrice(e.target.value)} required inputMode="decimal" size={6} />
          </label>
          <button type="submit" className="secondary" disabled={busy} aria-label={`Set the price of ${service.name}`}>
            Set
          </button>
        </form>
        <div className="actions">
          <button type="button" className="secondary" disabled={busy} onClick={() => onActive(!service.active)}>
            {service.active ? `Take ${service.name} off sale` : `Put ${service.name} on sale`}
          </button>
          <button
            type="button"
            className="danger"
            disabled={busy}
            onClick={() => {
              if (window.confirm(`Delete the service “${service.name}”? Rentals already paid stay with the agent.`)) onDelete();
            }}
          >
            Delete {service.name}
          </button>
        </div>
      </td>
    </tr>
  );
}

function NewService({
  busy,
  onCreate,
}: {
  busy: boolean;
  onCreate(fields: { name: string; description: string; price: string; serviceType: "api" | "a2a" }): void;
}) {
  const [name, setName] = useState("");
  const [description, setDescription] = useState("");
  const [price, setPrice] = useState("");
  const [serviceType, setServiceType] = useState<"api" | "a2a">("api");
  return (
    <form
      className="stack-form"
      onSubmit={(event) => {
        event.preventDefault();
        onCreate({ name, description, price, serviceType });
      }}
    >
      <h3>List a new service</h3>
      <div className="inline-form">
        <label>
          Service name
          <input value={name} onChange={(e) => setName(e.target.value)} required minLength={5} maxLength={60} />
        </label>
        <label>
          Price per call (USDC)
          <input value={price} onChange={(e) => setPrice(e.target.value)} required inputMode="decimal" size={8} />
        </label>
        <label>
          Type
          <select value={serviceType} onChange={(e) => setServiceType(e.target.value as "api" | "a2a")}>
            <option value="api">api</option>
            <option value="a2a">a2a</option>
          </select>
        </label>
      </div>
      <label htmlFor="service-description">Description (plain text)</label>
      <textarea id="service-description" value={description} onChange={(e) => setDescription(e.target.value)} rows={2} maxLength={2000} />
      <button type="submit" disabled={busy}>
        List the service
      </button>
    </form>
  );
}
