/**
 * Services (docs/services.md): a hosted agent's rentable, fixed-price listings. The store and its routes (public
 * listing, the owner's management), what the listing checks of a rental read (`rentalTerms`), the active services an
 * agent card lists, and the indexer projection that counts each settled paid rental once (`sold_count`).
 */
export { createServiceStore, DEFAULT_SERVICE_LIMITS, type RentalTerms, type RequireOwnedAgent, type ServiceLimits, type ServiceStore } from "./store";
export { serviceRoutes, type ServiceRoutesDeps } from "./routes";
export { createServiceSalesProjection } from "./projection";
