// Error responses carry only a registry code (never text), so failures inside
// the extension are thrown as CodeError and mapped to their code on reply.
export class CodeError extends Error {
  constructor(code) {
    super(code);
    this.code = code;
  }
}

export function fail(code) {
  throw new CodeError(code);
}

export const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

// orFail awaits a debugger call and turns its failure into code, keeping
// codes already decided (a dropped gate, a cancel) as they are.
export async function orFail(promise, code) {
  try {
    return await promise;
  } catch (e) {
    if (e instanceof CodeError) throw e;
    fail(code);
  }
}
