const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "1500", "500ms", "30s", "15m", "1h", "7d" → milliseconds; anything else → undefined. */
export function parseDuration(text: string): number | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/.exec(text);
  if (!match) return undefined;
  const ms = Number(match[1]) * (UNITS[match[2] ?? 'ms'] ?? 1);
  return Number.isFinite(ms) ? Math.round(ms) : undefined;
}
