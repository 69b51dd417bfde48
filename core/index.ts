/**
 * The rules shared by the server, the SDK, its worker runtime and the CLI, each written once. Core depends only on
 * Node built-ins, ethers and @noble/curves, and does no I/O.
 */
export * from "./bulk";
export * from "./capabilities";
export * from "./crypto";
export * from "./escrow";
export * from "./issues";
export * from "./limits";
export * from "./money";
export * from "./task-fields";
export * from "./text";
export * from "./verification";
