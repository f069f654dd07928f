// The few global types the checker needs (it runs with noLib: the bundled compiler ships no
// lib.d.ts). Members a process may call but that are not declared here read as `any`, so a
// missing library member is never reported as the author's mistake.
interface Object {}
interface Function {
  apply(thisArg: any, args?: any): any;
  call(thisArg: any, ...args: any[]): any;
  bind(thisArg: any, ...args: any[]): any;
}
interface CallableFunction extends Function {}
interface NewableFunction extends Function {}
interface IArguments { length: number; [index: number]: any }
interface Boolean { [member: string]: any }
interface Number { toFixed(digits?: number): string; [member: string]: any }
interface String {
  readonly length: number;
  toUpperCase(): string;
  toLowerCase(): string;
  trim(): string;
  split(separator: string): string[];
  slice(start?: number, end?: number): string;
  startsWith(text: string): boolean;
  endsWith(text: string): boolean;
  includes(text: string): boolean;
  [member: string]: any;
}
interface RegExp { test(text: string): boolean; [member: string]: any }
interface ReadonlyArray<T> {
  readonly length: number;
  readonly [index: number]: T;
  map<U>(fn: (value: T, index: number) => U): U[];
  filter(fn: (value: T, index: number) => unknown): T[];
  find(fn: (value: T, index: number) => unknown): T | undefined;
  some(fn: (value: T, index: number) => unknown): boolean;
  every(fn: (value: T, index: number) => unknown): boolean;
  includes(value: T): boolean;
  join(separator?: string): string;
  slice(start?: number, end?: number): T[];
  [member: string]: any;
}
interface Array<T> extends ReadonlyArray<T> {
  length: number;
  [index: number]: T;
  push(...items: T[]): number;
}
interface TemplateStringsArray extends ReadonlyArray<string> { readonly raw: readonly string[] }
interface PromiseLike<T> { then(onfulfilled?: (value: T) => any, onrejected?: (reason: any) => any): PromiseLike<any> }
interface Promise<T> {
  then(onfulfilled?: (value: T) => any, onrejected?: (reason: any) => any): Promise<any>;
  catch(onrejected?: (reason: any) => any): Promise<any>;
}
interface Symbol {}
type Partial<T> = { [P in keyof T]?: T[P] };
type Readonly<T> = { readonly [P in keyof T]: T[P] };
type Record<K extends keyof any, T> = { [P in K]: T };
type Awaited<T> = T extends PromiseLike<infer U> ? Awaited<U> : T;
declare var Math: any;
declare var JSON: any;
declare var Object: any;
declare var Date: any;
declare var Number: any;
declare var String: any;
declare var Boolean: any;
declare var Array: any;
declare var Promise: any;
declare var console: any;
declare function parseInt(text: string, radix?: number): number;
declare function parseFloat(text: string): number;
declare function isNaN(value: number): boolean;
