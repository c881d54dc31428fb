#if canImport(SwiftUI)
  import SwiftUI

  /// The address section of a form, filled from the CEP by an ``AddressFormModel``: the CEP
  /// field (postal-code content type and a number pad on iOS) with a progress indicator while
  /// it is looked up, the model's message, and the street, number, complement, neighbourhood,
  /// city and UF fields, all labelled in Portuguese for VoiceOver.
  ///
  /// Put it in a `Form` and keep the model, which holds the address to submit:
  ///
  /// ```swift
  /// struct CheckoutView: View {
  ///   @State private var address = AddressFormModel(client: client)
  ///
  ///   var body: some View {
  ///     Form {
  ///       AddressFormView(model: address)
  ///       Button("Continuar") { submit(address.address) }
  ///         .disabled(!address.isComplete)
  ///     }
  ///   }
  /// }
  /// ```
  ///
  /// When the address is found, the focus moves to the number, the one field a CEP never
  /// fills.
  @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
  @MainActor
  public struct AddressFormView: View {
    @Bindable private var model: AddressFormModel
    @FocusState private var focus: Field?
    /// What the CEP field shows. Not bound to `model.cep` directly: when the model rejects a
    /// keystroke (a ninth digit, a letter), its value does not change, nothing is observed,
    /// and a bound field would keep showing the rejected character.
    @State private var cepInput = ""

    private enum Field: Hashable {
      case cep
      case numero
    }

    /// A section showing and editing `model`, which the caller keeps.
    public init(model: AddressFormModel) {
      _model = Bindable(model)
    }

    /// The section.
    public var body: some View {
      Section("Endereço") {
        HStack {
          TextField("CEP", text: $cepInput, prompt: Text("00000-000"))
            #if os(iOS)
              .textContentType(.postalCode)
              .keyboardType(.numberPad)
            #endif
            .focused($focus, equals: .cep)
            .accessibilityLabel("CEP")
            .onChange(of: cepInput) { _, typed in
              model.cep = typed
              if cepInput != model.cep { cepInput = model.cep }
            }
            .onChange(of: model.cep, initial: true) { _, cep in
              if cepInput != cep { cepInput = cep }
            }
          if model.state == .searching {
            ProgressView()
              .accessibilityLabel("Buscando o endereço do CEP")
          }
        }
        if let message = model.message {
          Text(message)
            .font(.footnote)
            .foregroundStyle(.secondary)
        }
        TextField("Rua", text: $model.logradouro)
          #if os(iOS)
            .textContentType(.streetAddressLine1)
          #endif
          .accessibilityLabel("Rua")
        TextField("Número", text: $model.numero)
          #if os(iOS)
            .keyboardType(.numbersAndPunctuation)
          #endif
          .focused($focus, equals: .numero)
          .accessibilityLabel("Número")
        TextField("Complemento", text: $model.complemento)
          #if os(iOS)
            .textContentType(.streetAddressLine2)
          #endif
          .accessibilityLabel("Complemento")
        TextField("Bairro", text: $model.bairro)
          .accessibilityLabel("Bairro")
        TextField("Cidade", text: $model.localidade)
          #if os(iOS)
            .textContentType(.addressCity)
          #endif
          .accessibilityLabel("Cidade")
        TextField("UF", text: $model.uf)
          #if os(iOS)
            .textContentType(.addressState)
            .textInputAutocapitalization(.characters)
          #endif
          .accessibilityLabel("Estado (UF)")
      }
      .onChange(of: model.state) { _, state in
        if case .found = state, focus == .cep {
          focus = .numero
        }
      }
    }
  }
#endif
