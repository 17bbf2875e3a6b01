const n = 786432; const a = new Float32Array(n); for (let i = 0; i < n; i++) a[i] = (Math.random() * 2 - 1) * 3; const o = new Float32Array(n);
function tanhMath() { for (let i = 0; i < n; i++) o[i] = Math.tanh(a[i]); }
function tanhExp() { for (let i = 0; i < n; i++) { const e = Math.exp(-2 * Math.abs(a[i])); const t = (1 - e) / (1 + e); o[i] = a[i] < 0 ? -t : t; } }
function expMath() { for (let i = 0; i < n; i++) o[i] = Math.exp(a[i]); }
function sigm() { for (let i = 0; i < n; i++) o[i] = 1 / (1 + Math.exp(-a[i])); }
function add() { for (let i = 0; i < n; i++) o[i] = a[i] + o[i]; }
for (const f of [tanhMath, tanhExp, expMath, sigm, add]) { let best = 1e9; for (let r = 0; r < 15; r++) { const t0 = performance.now(); f(); best = Math.min(best, performance.now() - t0); } console.log(f.name, best.toFixed(2), 'ms', (best * 1e6 / n).toFixed(2), 'ns/elem'); }
