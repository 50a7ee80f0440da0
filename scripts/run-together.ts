import { spawn } from 'node:child_process'

// `npm test`'s last stretch: the conformance suite (one process, mostly one core) and the benchmark smoke
// (short-lived processes) leave each other a core, so they run side by side (~15 s of the run on 2 cores).
// The first script's output streams live; each other one's is printed whole when it ends, so the logs
// never interleave. Exit code: the first non-zero one, in the order given.
//
//   node --import tsx scripts/run-together.ts test:features bench:smoke

const scripts = process.argv.slice(2)
if (scripts.length === 0) {
  console.error('usage: run-together.ts <npm script> [<npm script> …]')
  process.exit(2)
}

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
const runs = scripts.map((script, i) => {
  const child = spawn(npm, ['run', '--silent', script], {
    stdio: i === 0 ? 'inherit' : ['ignore', 'pipe', 'pipe'],
  })
  const chunks: Buffer[] = []
  child.stdout?.on('data', (chunk: Buffer) => chunks.push(chunk))
  child.stderr?.on('data', (chunk: Buffer) => chunks.push(chunk))
  return new Promise<number>((resolve) =>
    child.on('close', (code, signal) => {
      if (i > 0) {
        process.stdout.write(`\n── npm run ${script} ${'─'.repeat(Math.max(0, 60 - script.length))}\n`)
        process.stdout.write(Buffer.concat(chunks))
      }
      if (code !== 0) console.error(`npm run ${script}: ${signal ? `killed by ${signal}` : `exit ${code}`}`)
      resolve(code ?? 1)
    }),
  )
})
const codes = await Promise.all(runs)
process.exit(codes.find((code) => code !== 0) ?? 0)
