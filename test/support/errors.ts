// expectCode asserts an error's class and code, not its message text: expectCode(fn or promise, Class, code)
// returns the error (for its context) and fails the test when nothing is thrown, or something else is.
import { expect } from '@jest/globals';
import type { FlannelError } from '../../src/basics/errors.js';

type ErrorClass<E extends FlannelError> = abstract new (...args: never[]) => E;

function check<E extends FlannelError>(err: unknown, cls: ErrorClass<E>, code: E['code']): E {
  if (!(err instanceof cls)) throw new Error(`expected a ${cls.name} ${code}, got ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`, { cause: err });
  expect(err.code).toBe(code);
  return err;
}

/** The error `fn` throws, checked to be a `cls` with `code`. */
export function expectCode<E extends FlannelError>(fn: () => unknown, cls: ErrorClass<E>, code: E['code']): E;
/** The error `promise` rejects with, checked to be a `cls` with `code`. */
export function expectCode<E extends FlannelError>(promise: Promise<unknown>, cls: ErrorClass<E>, code: E['code']): Promise<E>;
export function expectCode<E extends FlannelError>(x: (() => unknown) | Promise<unknown>, cls: ErrorClass<E>, code: E['code']): E | Promise<E> {
  if (typeof x !== 'function') {
    return x.then(
      () => {
        throw new Error(`expected a ${cls.name} ${code}, the promise resolved`);
      },
      (err: unknown) => check(err, cls, code),
    );
  }
  try {
    x();
  } catch (err) {
    return check(err, cls, code);
  }
  throw new Error(`expected a ${cls.name} ${code}, nothing was thrown`);
}
