#if canImport(SwiftUI)
  import CPFHub
  import SwiftUI

  /// The tutorial's lookup screen, rebuilt on ``CPFLookupModel``: a CPF field, a button, and
  /// the person's name and birth date or a message in Portuguese.
  ///
  /// ```swift
  /// CPFLookupView(client: CPFClient(apiKey: key))
  /// ```
  @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
  @MainActor
  public struct CPFLookupView: View {
    @State private var model: CPFLookupModel

    /// A screen with its own model, looking CPFs up with `client`.
    public init(client: CPFClient) {
      _model = State(initialValue: CPFLookupModel(client: client))
    }

    /// A screen showing `model`, which the caller keeps.
    public init(model: CPFLookupModel) {
      _model = State(initialValue: model)
    }

    /// The screen.
    public var body: some View {
      Form {
        Section {
          TextField("000.000.000-00", text: $model.input)
            #if os(iOS)
              .keyboardType(.numbersAndPunctuation)
            #endif
            .onSubmit { model.lookup() }
          Button("Consultar") { model.lookup() }
            .disabled(model.isLoading || model.input.isEmpty)
        }
        if model.isLoading {
          ProgressView()
        }
        if let person = model.person {
          Section("Resultado") {
            LabeledContent("Nome", value: person.name)
            LabeledContent("Data de nascimento", value: person.birthDate)
          }
        }
        if let message = model.errorMessage {
          Text(message).foregroundStyle(.red)
        }
      }
      .navigationTitle("Consulta de CPF")
    }
  }
#endif
