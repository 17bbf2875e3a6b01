/**
 * How numbers read in the report's tables. Every formatter keeps enough digits to compare with
 * report.json at a glance, and shows null (undefined) values as an en dash.
 */
export const MISSING = '–';

type Maybe = number | null | undefined;
const guard = (f: (v: number) => string) => (v: Maybe) =>
  v === null || v === undefined || !Number.isFinite(v) ? MISSING : f(v);

/** 1,234,567 */
export const formatCount = guard((v) => Math.round(v).toLocaleString('en'));
/** 27.15 */
export const formatFixed2 = guard((v) => v.toFixed(2));
/** 0.812 (correlations, cosines) */
export const formatFixed3 = guard((v) => v.toFixed(3));
/** 20.3 */
export const formatFixed1 = guard((v) => v.toFixed(1));
/** 28.2% from 0.282 */
export const formatPercent = guard((v) => `${(v * 100).toFixed(1)}%`);
/** 43.08 MB, 512.3 kB, 900 B (decimal units, as file managers and HTTP tools show them) */
export const formatBytes = guard((v) =>
  v >= 1e6 ? `${(v / 1e6).toFixed(2)} MB` : v >= 1e3 ? `${(v / 1e3).toFixed(1)} kB` : `${Math.round(v)} B`,
);
/** 1234 ms, 56.7 ms */
export const formatMs = guard((v) => (v >= 100 ? `${v.toFixed(0)} ms` : `${v.toFixed(1)} ms`));
/** +4.64, -0.30 (differences) */
export const formatSigned2 = guard((v) => `${v >= 0 ? '+' : ''}${v.toFixed(2)}`);
/** +13.6%, -4.2% from 0.136 (relative changes) */
export const formatSignedPercent = guard((v) => `${v >= 0 ? '+' : ''}${(v * 100).toFixed(1)}%`);
