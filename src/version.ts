// The agent's version, printed by --version and logged at start.
export const VERSION = '0.1.0';
