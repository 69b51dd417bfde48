/** The skills registry (issue 25): its store and routes. Installing into agents is server/hosted's. */
export { createSkillStore, type SkillStore, type SkillForInstall, type CheckToolDefinition } from "./store";
export { skillRoutes } from "./routes";
