// "Did you mean" for mistyped commands and options (issue 32: `serv` got "unknown command" and `--paralel`
// Node's raw parseArgs message). Optimal string alignment distance: a swap of two neighbours is one edit,
// as people mistype.

function distance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  )
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      const row = d[i] as number[]
      const above = d[i - 1] as number[]
      row[j] = Math.min((above[j] as number) + 1, (row[j - 1] as number) + 1, (above[j - 1] as number) + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        row[j] = Math.min(row[j] as number, ((d[i - 2] as number[])[j - 2] as number) + 1)
      }
    }
  }
  return (d[a.length] as number[])[b.length] as number
}

/** The candidate closest to `word` when it is close enough to be what was meant (or a prefix of it). */
export function nearest(word: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined
  let bestDistance = Number.POSITIVE_INFINITY
  for (const candidate of candidates) {
    const d = candidate.startsWith(word) && word.length >= 3 ? 0.5 : distance(word, candidate)
    if (d < bestDistance) {
      best = candidate
      bestDistance = d
    }
  }
  // Up to a third of the word may be wrong (at least one edit, at most three).
  return bestDistance <= Math.min(3, Math.max(1, Math.floor(word.length / 3))) ? best : undefined
}

/** ` Did you mean "x"?`, or nothing. */
export function didYouMean(
  word: string,
  candidates: Iterable<string>,
  quote = (s: string) => `"${s}"`,
): string {
  const match = nearest(word, candidates)
  return match ? ` Did you mean ${quote(match)}?` : ''
}

/** The long options a help text names (`--parallel N`, `--tls-cert FILE`). */
export function optionsOf(help: string): Set<string> {
  return new Set([...help.matchAll(/(?<![\w-])--[a-z][a-z0-9-]*/g)].map((m) => m[0]))
}
