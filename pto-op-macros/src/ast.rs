//! The op module as written: its items, with the functions that carry helper attributes.

use core::fmt;

use syn::{Attribute, Item, ItemFn, ItemMod};

use crate::attr::ParityAttr;
use crate::ctxt::Ctxt;

/// The name of the attribute that declares a parity case on the kernel.
pub const PARITY: &str = "parity";

/// What a helper attribute says a function is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    InferShape,
    InferDtype,
    Reference,
    Kernel,
    Estimator,
    Properties,
}

impl Role {
    pub const ALL: [Role; 6] = [
        Role::InferShape,
        Role::InferDtype,
        Role::Reference,
        Role::Kernel,
        Role::Estimator,
        Role::Properties,
    ];

    /// The helper attribute's name.
    pub fn attr_name(self) -> &'static str {
        match self {
            Role::InferShape => "infer_shape",
            Role::InferDtype => "infer_dtype",
            Role::Reference => "reference",
            Role::Kernel => "kernel",
            Role::Estimator => "estimator",
            Role::Properties => "properties",
        }
    }

    fn of(attr: &Attribute) -> Option<Role> {
        let ident = attr.path().get_ident()?;
        Role::ALL.into_iter().find(|r| ident == r.attr_name())
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#[{}]", self.attr_name())
    }
}

/// A function marked with a helper attribute.
pub struct RoleFn {
    pub role: Role,
    /// The helper attribute, for spans.
    pub attr: Attribute,
    /// The function, helper attribute removed.
    pub item: ItemFn,
    /// Its `#[parity(...)]` cases, parsed.
    pub parity: Vec<ParityAttr>,
}

/// A `#[parity]` on an item other than a role function, to be reported once it is known
/// whether the op has a kernel at all.
pub struct StrayParity {
    pub attr: Attribute,
    /// What it was put on, for the message (`function `helper``, `#[reference] `reference``).
    pub target: String,
}

/// The module, with helper attributes stripped from its items.
pub struct OpModule {
    pub module: ItemMod,
    pub role_fns: Vec<RoleFn>,
    /// `#[parity]` attributes on anything but a role function.
    pub stray_parity: Vec<StrayParity>,
}

impl OpModule {
    /// Walks the module's items, taking out helper attributes. Returns `None` when the
    /// module has no inline body (the caller reports that).
    pub fn parse(cx: &mut Ctxt, mut module: ItemMod) -> Option<OpModule> {
        let (_, items) = module.content.as_mut()?;
        let mut role_fns = Vec::new();
        let mut stray_parity = Vec::new();
        for item in items.iter_mut() {
            match item {
                Item::Fn(f) => {
                    let roles = take_role_attrs(cx, &mut f.attrs);
                    let parity = take_parity_attrs(&mut f.attrs);
                    let mut roles = roles.into_iter();
                    if let Some((role, attr)) = roles.next() {
                        for (other, extra) in roles {
                            let name = &f.sig.ident;
                            cx.error_spanned_by(
                                &extra,
                                format!(
                                    "`{name}` is already marked {role}; a function has one \
                                     role: remove {other} or move it to its own function"
                                ),
                            );
                        }
                        let parity = parity
                            .into_iter()
                            .filter_map(|attr| ParityAttr::parse(cx, attr))
                            .collect();
                        role_fns.push(RoleFn {
                            role,
                            attr,
                            item: f.clone(),
                            parity,
                        });
                    } else {
                        let target = format!("function `{}`", f.sig.ident);
                        stray_parity.extend(parity.into_iter().map(|attr| StrayParity {
                            attr,
                            target: target.clone(),
                        }));
                    }
                }
                other => {
                    if let Some(attrs) = item_attrs_mut(other) {
                        for (role, attr) in take_role_attrs(cx, attrs) {
                            cx.error_spanned_by(&attr, format!("{role} goes on a function"));
                        }
                        stray_parity.extend(take_parity_attrs(attrs).into_iter().map(|attr| {
                            StrayParity {
                                attr,
                                target: "an item that is not a function".to_owned(),
                            }
                        }));
                    }
                }
            }
        }
        Some(OpModule {
            module,
            role_fns,
            stray_parity,
        })
    }
}

/// Removes the helper attributes from `attrs`, checking they take no arguments.
fn take_role_attrs(cx: &mut Ctxt, attrs: &mut Vec<Attribute>) -> Vec<(Role, Attribute)> {
    let mut taken = Vec::new();
    attrs.retain(|attr| match Role::of(attr) {
        Some(role) => {
            taken.push((role, attr.clone()));
            false
        }
        None => true,
    });
    for (role, attr) in &taken {
        if !matches!(attr.meta, syn::Meta::Path(_)) {
            cx.error_spanned_by(&attr.meta, format!("{role} takes no arguments"));
        }
    }
    taken
}

/// Removes the `#[parity(...)]` attributes from `attrs`.
fn take_parity_attrs(attrs: &mut Vec<Attribute>) -> Vec<Attribute> {
    let mut taken = Vec::new();
    attrs.retain(|attr| {
        let parity = attr.path().is_ident(PARITY);
        if parity {
            taken.push(attr.clone());
        }
        !parity
    });
    taken
}

fn item_attrs_mut(item: &mut Item) -> Option<&mut Vec<Attribute>> {
    Some(match item {
        Item::Const(i) => &mut i.attrs,
        Item::Enum(i) => &mut i.attrs,
        Item::Impl(i) => &mut i.attrs,
        Item::Mod(i) => &mut i.attrs,
        Item::Static(i) => &mut i.attrs,
        Item::Struct(i) => &mut i.attrs,
        Item::Trait(i) => &mut i.attrs,
        Item::Type(i) => &mut i.attrs,
        Item::Use(i) => &mut i.attrs,
        _ => return None,
    })
}

/// The module's doc comment, one line per `///` line, outer whitespace trimmed.
pub fn doc_comment(attrs: &[Attribute]) -> String {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .map(|line| {
            line.strip_prefix(' ')
                .unwrap_or(&line)
                .trim_end()
                .to_owned()
        })
        .collect();
    lines.join("\n").trim().to_owned()
}
