// A real OpenID Connect provider (oidc-provider) for the gateway's identity interoperability
// tests (tests/oidc.rs). Usage: node provider.mjs '<config JSON>'
//
// config: {
//   "audience": "ehds-gateway",            // `aud` of access tokens for the gateway
//   "resource": "urn:ehds:gateway",        // its resource indicator (RFC 8707)
//   "scope": "gateway",                    // the scope the gateway's resource server offers
//   "clients": [{
//     "client_id": "...",
//     "method": "client_secret_basic" | "client_secret_post" | "private_key_jwt",
//     "client_secret": "...",              // the two secret methods
//     "jwk": { public JWK },               // private_key_jwt: the client's public key
//     "roles": ["researcher"],             // put in the token as realm_access.roles
//     "org": "uni-a"                       // put in the token as `org`
//   }],
//   "console": {                           // optional: the web console's sign-in
//     "client_id": "...",                  // a public client: authorization code + PKCE
//     "redirect_uri": "...",
//     "accounts": {"<login>": {"roles": [...], "org": "..."}}
//   }
// }
//
// With `console`, the provider's development login and consent pages are on: any login name
// signs in (they take no password), and an account's roles and organisation come from
// `accounts`.
//
// It listens on a free loopback port and prints `ready <issuer>` once it serves. Access tokens
// for the gateway are JWTs (RFC 9068), which oidc-provider issues only for a resource server
// named by a resource indicator: clients ask with `resource=<resource>`. Roles are nested the
// way Keycloak puts realm roles (`realm_access.roles`).
//
// Test-only administration, under /admin (never part of a real provider):
//   POST /admin/rotate       a new RS256 key goes first in the JWKS and signs from now on; the
//                            old ones stay published (the overlap that lets caches catch up)
//   POST /admin/retire       only the newest key stays published
//   GET  /admin/signing-key  {kid, private_pem, public_pem} of the current key, so a test can
//                            forge tokens a gateway trusting this provider would verify
//                            (expired, not yet valid, wrong audience or issuer)
import { generateKeyPairSync, randomUUID, webcrypto } from 'node:crypto';
import { createServer } from 'node:http';

// Node.js before 19 keeps Web Crypto off the global object, where the provider's JOSE library
// looks for it; set it before that library loads.
globalThis.crypto ??= webcrypto;
globalThis.CryptoKey ??= webcrypto.CryptoKey;
const { default: Provider } = await import('oidc-provider');

const config = JSON.parse(process.argv[2] ?? '{}');
const clientsById = new Map(config.clients.map((c) => [c.client_id, c]));

function newKey() {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const kid = randomUUID();
  return {
    kid,
    jwk: { ...privateKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' },
    privatePem: privateKey.export({ format: 'pem', type: 'pkcs8' }),
    publicPem: publicKey.export({ format: 'pem', type: 'spki' }),
  };
}

function clientMetadata(c) {
  const metadata = {
    client_id: c.client_id,
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: c.method,
    scope: config.scope,
  };
  if (c.method === 'private_key_jwt') {
    metadata.jwks = { keys: [c.jwk] };
  } else {
    metadata.client_secret = c.client_secret;
  }
  return metadata;
}

function consoleMetadata(c) {
  return {
    client_id: c.client_id,
    grant_types: ['authorization_code'],
    response_types: ['code'],
    redirect_uris: [c.redirect_uri],
    token_endpoint_auth_method: 'none',
    scope: `openid ${config.scope}`,
  };
}

function buildProvider(issuer, keys) {
  const clients = config.clients.map(clientMetadata);
  if (config.console) clients.push(consoleMetadata(config.console));
  const provider = new Provider(issuer, {
    clients,
    scopes: ['openid', config.scope],
    jwks: { keys: keys.map((k) => k.jwk) },
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: Boolean(config.console) },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        async getResourceServerInfo(_ctx, resourceIndicator) {
          if (resourceIndicator !== config.resource) {
            throw new Provider.errors.InvalidTarget();
          }
          return {
            scope: config.scope,
            audience: config.audience,
            accessTokenTTL: 600,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
    async extraTokenClaims(_ctx, token) {
      const account = token.accountId && config.console?.accounts?.[token.accountId];
      const client = account ?? clientsById.get(token.clientId);
      if (!client) return undefined;
      return {
        realm_access: { roles: client.roles ?? [] },
        ...(client.org ? { org: client.org } : {}),
      };
    },
  });
  // Behind no proxy; the issuer is plain http on loopback.
  provider.proxy = false;
  return provider;
}

let keys = [newKey()];
let provider;
let handler;

function reload(issuer) {
  provider = buildProvider(issuer, keys);
  handler = provider.callback();
}

function json(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

const server = createServer((req, res) => {
  if (req.url === '/admin/rotate' && req.method === 'POST') {
    keys = [newKey(), ...keys];
    reload(provider.issuer);
    return json(res, 200, { kid: keys[0].kid });
  }
  if (req.url === '/admin/retire' && req.method === 'POST') {
    keys = [keys[0]];
    reload(provider.issuer);
    return json(res, 200, { kid: keys[0].kid });
  }
  if (req.url === '/admin/signing-key' && req.method === 'GET') {
    return json(res, 200, {
      kid: keys[0].kid,
      private_pem: keys[0].privatePem,
      public_pem: keys[0].publicPem,
    });
  }
  return handler(req, res);
});

server.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  const issuer = `http://127.0.0.1:${port}`;
  reload(issuer);
  process.stdout.write(`ready ${issuer}\n`);
});

// The test harness closes our stdin when it is done (or dies): leave with it.
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
