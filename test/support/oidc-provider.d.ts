// The little of oidc-provider's API the test provider uses (the package ships no types).
declare module 'oidc-provider' {
  import type { Server } from 'node:http';
  // the provider's configuration and context are untyped JavaScript
  type Loose = any;
  export default class Provider {
    constructor(issuer: string, configuration: Loose);
    use(middleware: (ctx: Loose, next: () => Promise<void>) => Promise<void>): void;
    listen(port: number, host: string, cb: () => void): Server;
  }
  export const errors: { InvalidTarget: new () => Error };
}
