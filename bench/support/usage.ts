// What a measured child process reports of itself: CPU time so far and peak RSS.

export interface Usage {
  cpuMs: number;
  maxRssMb: number;
  /** PostgreSQL statements the worker sent so far (BEGIN and COMMIT included). */
  statements?: number;
}

export function usage(): Usage {
  const cpu = process.cpuUsage();
  return { cpuMs: (cpu.user + cpu.system) / 1000, maxRssMb: Math.round(process.resourceUsage().maxRSS / 1024) };
}
