// What every child process of the benchmarks reads and writes: its numeric
// options (`--name=N`) and the JSON lines its parent parses. A module of
// its own, so a child that measures one library loads no other.

/** The numeric option `--name=N` of this process's command line, or `dflt`. */
export function opt(name, dflt) {
  const a = process.argv.slice(2).find((x) => x.startsWith(`--${name}=`));
  return a ? Number(a.slice(name.length + 3)) : dflt;
}

/** One JSON line on stdout, what the parent reads. */
export function emit(o) {
  process.stdout.write(JSON.stringify(o) + '\n');
}
