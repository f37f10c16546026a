/**
 * The Go runtime settings of the embedded servers (the Temporal dev server and FerretDB are Go
 * programs). With Go's default GOGC=100 the dev server's collector ran every ~2 s under start
 * load (a live heap of ~95 MB) and took ~0.12 of a core, a tenth of Temporal's CPU, on a machine
 * whose two cores the API, the worker and FerretDB share with it. GOGC=400 lets the heap grow to
 * five times the live data before a collection (~10 s apart, ~0.03 cores; RSS ~310 → ~620 MB);
 * GOMEMLIMIT caps that growth. An operator's own GOGC or GOMEMLIMIT wins.
 */

/** The environment of an embedded Go server: ours, Go's collector tuned as above, then `extra`. */
export function goServerEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return { GOGC: '400', GOMEMLIMIT: '2GiB', ...process.env, ...extra };
}
