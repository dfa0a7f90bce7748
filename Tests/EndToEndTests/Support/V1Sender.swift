import Foundation
import TestSupport
import Testing

/// An FCM HTTP v1 sender made of Google's own OAuth 2 library: Python `google-auth` reads the service-account file,
/// `refresh()` exchanges its signed JWT at the file's `token_uri` (PushRelay's `/token`), and an `AuthorizedSession`
/// makes the requests. Nothing of PushRelay's code is on the sender's side.
///
/// The script reads a JSON spec on stdin — `{"file", "scopes", "requests": [{"method", "path", "json"|"data",
/// "headers"}], "jwt": {claims to override}, "tamper": bool, "token_only": bool}` — and prints one JSON object:
/// `{"token", "responses": [{"status", "body"}]}`, or `{"refresh_error": "..."}` when `refresh()` fails. With
/// `jwt`, it signs an assertion itself (google.auth.crypt/jwt) with the file's key and posts it to `/token`.
let v1SenderScript = #"""
import json, sys, time
from google.oauth2 import service_account
from google.auth import crypt, jwt as gjwt, exceptions
from google.auth.transport.requests import AuthorizedSession, Request
import requests

spec = json.load(sys.stdin)
base = spec["base"]
info = json.load(open(spec["file"]))
if "jwt" in spec:
    if spec.get("no_kid"):
        signer = crypt.RSASigner.from_string(info["private_key"])  # no key id: the JWT header has no kid
    else:
        signer = crypt.RSASigner.from_service_account_info(info)
    now = int(time.time())
    claims = {"iss": info["client_email"], "aud": info["token_uri"], "iat": now, "exp": now + 3600,
              "scope": "https://www.googleapis.com/auth/firebase.messaging"}
    claims.update(spec["jwt"])
    assertion = gjwt.encode(signer, claims).decode()
    if spec.get("tamper"):
        head, body, sig = assertion.split(".")
        payload = json.loads(gjwt._helpers.padded_urlsafe_b64decode(body))
        payload["iss"] = payload["iss"] + "x"
        body = gjwt._helpers.unpadded_urlsafe_b64encode(json.dumps(payload).encode()).decode()
        assertion = ".".join([head, body, sig])
    r = requests.post(info["token_uri"], data={"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
                                               "assertion": assertion})
    print(json.dumps({"token_status": r.status_code, "token_body": r.json()}))
    sys.exit(0)
creds = service_account.Credentials.from_service_account_file(spec["file"], scopes=spec["scopes"])
try:
    creds.refresh(Request())
except exceptions.RefreshError as error:
    print(json.dumps({"refresh_error": str(error)}))
    sys.exit(0)
session = AuthorizedSession(creds)
out = []
for q in spec.get("requests", []):
    kwargs = {"headers": q.get("headers", {})}
    if "json" in q: kwargs["json"] = q["json"]
    if "data" in q: kwargs["data"] = q["data"]
    r = session.request(q["method"], base + q["path"], **kwargs)
    out.append({"status": r.status_code, "body": r.text, "retry_after": r.headers.get("Retry-After")})
print(json.dumps({"token": creds.token, "expiry": str(creds.expiry), "responses": out}))
"""#

struct V1Request {
    var method = "POST"
    var path: String
    var json: Any? = nil
    var headers: [String: String] = [:]

    var spec: [String: Any] {
        var value: [String: Any] = ["method": method, "path": path, "headers": headers]
        if let json { value["json"] = json }
        return value
    }
}

struct V1Response {
    var status: Int
    var body: String
    var retryAfter: String?
    var json: [String: Any] { (try? jsonObject(body)) ?? [:] }
    /// `error.details[].errorCode` of the FcmError detail.
    var errorCode: String? {
        let details = (json["error"] as? [String: Any])?["details"] as? [[String: Any]] ?? []
        return details.first { ($0["@type"] as? String)?.hasSuffix("FcmError") == true }?["errorCode"] as? String
    }
    var status_: String? { (json["error"] as? [String: Any])?["status"] as? String }
}

extension Daemon {
    /// `pushrelay project service-account NAME --public-url <this daemon> --out FILE`; returns the file's path.
    func serviceAccount(_ project: String = "shop") async throws -> String {
        let file = dataDir.appendingPathComponent("sa-\(project)-\(UUID().uuidString.prefix(8)).json").path
        let result = try await Daemon.cli([
            "project", "service-account", project, "--data-dir", dataDir.path, "--public-url", baseURL, "--out", file,
            "--json",
        ] + storeArguments)
        guard result.status == 0 else { throw DaemonError(message: "service-account failed: \(result.stderr)") }
        return file
    }

    /// Runs the google-auth sender with `spec` (see ``v1SenderScript``).
    func googleAuth(_ spec: [String: Any]) async throws -> [String: Any] {
        var spec = spec
        spec["base"] = baseURL
        let input = String(decoding: try JSONSerialization.data(withJSONObject: spec), as: UTF8.self)
        let result = try await run("python3", ["-c", v1SenderScript], stdin: input)
        guard result.status == 0 else { throw DaemonError(message: "google-auth sender failed: \(result.stderr)") }
        return try jsonObject(result.stdout)
    }

    /// Refreshes `file`'s credentials with google-auth and makes `requests` with them.
    func v1Requests(
        file: String, _ requests: [V1Request],
        scopes: [String] = ["https://www.googleapis.com/auth/firebase.messaging"]
    ) async throws -> (token: String, responses: [V1Response]) {
        let out = try await googleAuth(["file": file, "scopes": scopes, "requests": requests.map(\.spec)])
        if let error = out["refresh_error"] { throw DaemonError(message: "refresh failed: \(error)") }
        let responses = (out["responses"] as? [[String: Any]] ?? []).map {
            V1Response(status: $0["status"] as? Int ?? 0, body: $0["body"] as? String ?? "",
                       retryAfter: $0["retry_after"] as? String)
        }
        return (out["token"] as? String ?? "", responses)
    }
}

/// The seed scenario as a v1 message: the alert from `notification`, `content-available` from `apns.payload`,
/// and the order as JSON text in `data` (v1 has no custom notification keys; data values are strings).
func v1ScenarioMessage(token: String) -> [String: Any] {
    let order = #"{"infoReason":"Status de pedido","orderID":3,"userEmail":"matilde@siecola.com.br","newOrderStatus":"Novo pedido"}"#
    return [
        "message": [
            "token": token,
            "notification": ["title": "Provedor de Mensagens", "body": "Status do pedido"],
            "data": ["orderInfo": order],
            "android": ["priority": "HIGH"],
            "apns": ["headers": ["apns-priority": "10"], "payload": ["aps": ["content-available": 1]]],
        ] as [String: Any],
    ]
}
