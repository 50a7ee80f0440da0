// Where a JSON text first breaks the grammar (RFC 8259), as line and column, for a configuration file that
// does not parse. JSON.parse says "at position N" for some mistakes only (Node 20: not for an unexpected
// token), so this scanner finds the place itself and says what it expected there. It runs only after
// JSON.parse failed; it never builds a value.

export interface JsonProblem {
  /** 1-based line and column (UTF-16 code units) of the offending character. */
  line: number
  column: number
  /** What is wrong there, e.g. "a comma before '}' (JSON allows no trailing comma)". */
  reason: string
  /** The text of that line, for a caret under the column. */
  lineText: string
}

class Stop {
  constructor(
    readonly offset: number,
    readonly reason: string,
  ) {}
}

/** Nesting beyond this is reported rather than recursed into (no stack overflow on a hostile file). */
const MAX_DEPTH = 1000

function describe(text: string, i: number): string {
  if (i >= text.length) return 'the end of the file'
  const c = text[i] as string
  if (c === '/' && (text[i + 1] === '/' || text[i + 1] === '*')) return 'a comment (JSON has none)'
  if (c === "'") return 'a single quote (JSON strings take double quotes)'
  if (/[A-Za-z_$]/.test(c)) {
    const word = /^[A-Za-z_$][\w$]*/.exec(text.slice(i, i + 40))?.[0] ?? c
    return `'${word}'`
  }
  const code = c.codePointAt(0) ?? 0
  return code < 0x20 || code === 0xfeff ? `the character U+${code.toString(16).padStart(4, '0')}` : `'${c}'`
}

function scan(text: string): void {
  let i = 0
  const ws = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i] as string)) i++
  }
  const fail = (reason: string, at = i): never => {
    throw new Stop(at, reason)
  }
  const unexpected = (expected: string): never => fail(`expected ${expected}, found ${describe(text, i)}`)

  const string = () => {
    const start = i
    i++ // the opening quote
    for (;;) {
      if (i >= text.length) fail('a string that is never closed (it starts here)', start)
      const code = text.charCodeAt(i)
      if (code === 0x22) {
        i++
        return
      }
      if (code < 0x20) {
        fail(
          code === 0x0a
            ? 'a line break inside a string (close the string, or write \\n)'
            : 'a control character inside a string (escape it)',
        )
      }
      if (code === 0x5c) {
        const next = text[i + 1]
        if (next !== undefined && '"\\/bfnrt'.includes(next)) i += 2
        else if (next === 'u' && /^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) i += 6
        else fail(`an invalid escape '\\${next ?? ''}' (allowed: \\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)`)
      } else i++
    }
  }

  const number = () => {
    const start = i
    if (text[i] === '-') i++
    if (text[i] === '0') {
      i++
      if (/[0-9]/.test(text[i] ?? '')) fail('a number with a leading zero', start)
    } else if (/[1-9]/.test(text[i] ?? '')) {
      while (/[0-9]/.test(text[i] ?? '')) i++
    } else unexpected('a digit')
    if (text[i] === '.') {
      i++
      if (!/[0-9]/.test(text[i] ?? '')) unexpected('a digit after the decimal point')
      while (/[0-9]/.test(text[i] ?? '')) i++
    }
    if (text[i] === 'e' || text[i] === 'E') {
      i++
      if (text[i] === '+' || text[i] === '-') i++
      if (!/[0-9]/.test(text[i] ?? '')) unexpected('a digit in the exponent')
      while (/[0-9]/.test(text[i] ?? '')) i++
    }
  }

  const value = (depth: number) => {
    if (depth > MAX_DEPTH) fail(`nesting deeper than ${MAX_DEPTH} levels`)
    ws()
    const c = text[i]
    if (c === '{') object(depth)
    else if (c === '[') array(depth)
    else if (c === '"') string()
    else if (c === '-' || /[0-9]/.test(c ?? '')) number()
    else literal()
  }

  const literal = () => {
    for (const word of ['true', 'false', 'null']) {
      if (text.startsWith(word, i)) {
        i += word.length
        return
      }
    }
    unexpected('a value (an object, array, string, number, true, false or null)')
  }

  const object = (depth: number) => {
    i++ // {
    ws()
    if (text[i] === '}') {
      i++
      return
    }
    for (;;) {
      ws()
      if (text[i] !== '"') unexpected('a property name in double quotes')
      string()
      ws()
      if (text[i] !== ':') unexpected("':' after the property name")
      i++
      value(depth + 1)
      ws()
      if (text[i] === '}') {
        i++
        return
      }
      if (text[i] !== ',') unexpected("',' or '}' after the property's value")
      const comma = i
      i++
      ws()
      if (text[i] === '}') fail("a comma before '}' (JSON allows no trailing comma)", comma)
    }
  }

  const array = (depth: number) => {
    i++ // [
    ws()
    if (text[i] === ']') {
      i++
      return
    }
    for (;;) {
      value(depth + 1)
      ws()
      if (text[i] === ']') {
        i++
        return
      }
      if (text[i] !== ',') unexpected("',' or ']' after the element")
      const comma = i
      i++
      ws()
      if (text[i] === ']') fail("a comma before ']' (JSON allows no trailing comma)", comma)
    }
  }

  value(0)
  ws()
  if (i < text.length) fail(`more text after the JSON value: ${describe(text, i)}`)
}

/** The first place `text` breaks JSON's grammar, or undefined when it is valid JSON. */
export function locateJsonProblem(text: string): JsonProblem | undefined {
  try {
    scan(text)
    return undefined
  } catch (error) {
    if (!(error instanceof Stop)) throw error
    const before = text.slice(0, error.offset)
    const lineStart = before.lastIndexOf('\n') + 1
    const lineEnd = text.indexOf('\n', error.offset)
    return {
      line: before.split('\n').length,
      column: error.offset - lineStart + 1,
      reason: error.reason,
      lineText: text.slice(lineStart, lineEnd < 0 ? text.length : lineEnd).replace(/\r$/, ''),
    }
  }
}

/** `<file> is not valid JSON at line L, column C: reason`, then the line and a caret under the column (tabs kept so the caret lines up). */
export function formatJsonProblem(file: string, problem: JsonProblem): string {
  const shown = problem.lineText.length > 160 ? problem.lineText.slice(0, 160) : problem.lineText
  const caret =
    problem.column <= shown.length + 1
      ? `\n    ${shown.slice(0, problem.column - 1).replace(/[^\t]/g, ' ')}^`
      : ''
  const where = `line ${problem.line}, column ${problem.column}`
  return `${file} is not valid JSON at ${where}: ${problem.reason}\n    ${shown}${caret}`
}
