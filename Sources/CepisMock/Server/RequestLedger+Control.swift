import Foundation

extension RequestLedger {
  /// The `/__mock/…` control endpoints: they script faults, set rate limits, read the log,
  /// reset the server and set the `/health` flags, all on this ledger.
  func control(_ name: String, request: MockHTTPRequest) -> Response {
    func reply(_ status: Int, _ body: [UInt8]) -> Response {
      Response(status: status, contentType: jsonType, body: .bytes(body))
    }
    func fail(_ status: Int, _ text: String) -> Response {
      reply(status, jsonObject(["ok": .bool(false), "mensagem": .string(text)]))
    }
    let expected = name == "requests" ? "GET" : "POST"
    let known = ["script", "mode", "reset", "requests", "degraded", "edition", "rate-limit"]
    guard known.contains(name) else { return fail(404, "Endpoint de controle desconhecido") }
    guard request.method == expected else {
      var response = fail(405, "Use \(expected)")
      response.headers.append(("Allow", expected))
      return response
    }
    switch name {
    case "rate-limit":
      return controlRateLimit(request)
    case "reset":
      reset()
      return reply(200, jsonObject(["ok": .bool(true)]))
    case "requests":
      let encoder = JSONEncoder()
      encoder.dateEncodingStrategy = .secondsSince1970
      encoder.outputFormatting = [.sortedKeys]
      guard let data = try? encoder.encode(log) else { return fail(500, "log encoding failed") }
      return reply(200, [UInt8](data))
    case "degraded":
      guard let object = try? JSONSerialization.jsonObject(with: Data(request.body)),
        let dictionary = object as? [String: Any], let flag = dictionary["degraded"] as? Bool
      else {
        return fail(400, #"Corpo esperado: {"degraded":true}"#)
      }
      setDegraded(flag)
      return reply(200, jsonObject(["ok": .bool(true), "degraded": .bool(flag)]))
    case "edition":
      guard let object = try? JSONSerialization.jsonObject(with: Data(request.body)),
        let dictionary = object as? [String: Any], let edition = dictionary["dne"] as? String,
        !edition.isEmpty
      else {
        return fail(400, #"Corpo esperado: {"dne":"2026-12"}"#)
      }
      setEdition(edition)
      return reply(200, jsonObject(["ok": .bool(true), "dne": .string(edition)]))
    default:
      // script or mode
      guard let object = try? JSONSerialization.jsonObject(with: Data(request.body)),
        let dictionary = object as? [String: Any]
      else {
        return fail(400, #"Corpo esperado: {"route":"csv","faults":[…]}"#)
      }
      guard let routeName = dictionary["route"] as? String,
        let route = MockRoute(rawValue: routeName)
      else {
        return fail(400, "route deve ser cep, csv, health, cpf, viacep ou brasilapi")
      }
      var faults: [MockFault] = []
      do {
        if let spec = dictionary["faults"] as? String {
          faults = try MockServer.parseFaults(spec)
        } else if let list = dictionary["faults"] as? [Any] {
          for item in list { faults += try MockServer.fault(fromJSON: item) }
        } else if dictionary["faults"] != nil {
          return fail(400, "faults deve ser uma lista")
        }
      } catch {
        return fail(400, "\(error)")
      }
      if name == "mode" {
        setMode(route, faults)
      } else {
        script(route, faults)
      }
      return reply(200, jsonObject(["ok": .bool(true), "faults": .int(faults.count)]))
    }
  }
}
