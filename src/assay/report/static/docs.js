// The API's reference, read from the server's own /openapi.json: each operation with its
// parameters, body and answers, then each schema. Text only (textContent), no CDN, no eval.
(function () {
  "use strict";

  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) el.setAttribute(k, v);
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      el.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    }
    return el;
  }

  const refName = (ref) => ref.split("/").pop();

  // A schema in one line: a reference by name (a link), an array of one, a choice of several.
  function typeOf(schema) {
    if (!schema) return "";
    if (schema.$ref) return h("a", { href: "#schema-" + refName(schema.$ref) }, refName(schema.$ref));
    if (schema.anyOf) return schema.anyOf.map((s, i) => [i ? " | " : "", typeOf(s)]);
    if (schema.type === "array") return ["array of ", typeOf(schema.items)];
    if (schema.enum) return "one of " + schema.enum.map(String).join(", ");
    if (schema.const !== undefined) return JSON.stringify(schema.const);
    return schema.format ? `${schema.type} (${schema.format})` : schema.type || "any";
  }

  function operation(path, method, op) {
    const params = op.parameters || [];
    const body = op.requestBody && op.requestBody.content && op.requestBody.content["application/json"];
    return h("section", { class: "panel operation", id: op.operationId },
      h("h3", {}, h("span", { class: "badge b-" + method }, method.toUpperCase()), " ", h("code", {}, path), " ", h("span", { class: "muted mono" }, op.operationId)),
      op.summary ? h("p", {}, op.summary) : null,
      op.description ? h("p", { class: "muted" }, op.description) : null,
      params.length ? h("div", { class: "table-wrap" }, h("table", { class: "params" },
        h("thead", {}, h("tr", {}, h("th", {}, "Parameter"), h("th", {}, "In"), h("th", {}, "Type"), h("th", {}, "Description"))),
        h("tbody", {}, params.map((p) => h("tr", {}, h("td", { class: "mono" }, p.name + (p.required ? " *" : "")), h("td", {}, p.in),
          h("td", {}, typeOf(p.schema)), h("td", {}, p.description || (p.schema && p.schema.description) || "")))))) : null,
      body ? h("p", {}, "Body: ", typeOf(body.schema)) : null,
      h("div", { class: "table-wrap" }, h("table", { class: "responses" },
        h("thead", {}, h("tr", {}, h("th", {}, "Status"), h("th", {}, "Meaning"), h("th", {}, "Body"))),
        h("tbody", {}, Object.entries(op.responses || {}).map(([code, r]) => {
          const content = r.content || {};
          const first = Object.entries(content)[0];
          return h("tr", { "data-status": code }, h("td", { class: "mono" }, code), h("td", {}, r.description || ""),
            h("td", {}, first ? [first[0], first[1].schema ? [" ", typeOf(first[1].schema)] : null] : ""));
        })))));
  }

  function schemaPanel(name, schema) {
    const props = Object.entries(schema.properties || {});
    const required = new Set(schema.required || []);
    return h("section", { class: "panel schema", id: "schema-" + name }, h("h3", {}, name),
      schema.description ? h("p", { class: "muted" }, schema.description) : null,
      props.length ? h("div", { class: "table-wrap" }, h("table", {},
        h("thead", {}, h("tr", {}, h("th", {}, "Field"), h("th", {}, "Type"), h("th", {}, "Description"))),
        h("tbody", {}, props.map(([k, v]) => h("tr", {}, h("td", { class: "mono" }, k + (required.has(k) ? " *" : "")), h("td", {}, typeOf(v)), h("td", {}, v.description || "")))))) :
        schema.enum ? h("p", {}, "one of " + schema.enum.map(String).join(", ")) : null);
  }

  async function main() {
    const root = document.getElementById("docs");
    let spec;
    try {
      const response = await fetch("openapi.json", { headers: { Accept: "application/json" } });
      if (!response.ok) throw new Error(`the server answered ${response.status}`);
      spec = await response.json();
    } catch (e) {
      root.replaceChildren(h("p", { class: "panel error" }, "The API's description could not be read: " + e.message));
      return;
    }
    const byTag = new Map();
    for (const [path, item] of Object.entries(spec.paths || {})) {
      for (const [method, op] of Object.entries(item)) {
        const tag = (op.tags && op.tags[0]) || "other";
        if (!byTag.has(tag)) byTag.set(tag, []);
        byTag.get(tag).push(operation(path, method, op));
      }
    }
    const schemas = Object.entries((spec.components && spec.components.schemas) || {}).sort(([a], [b]) => a.localeCompare(b));
    document.title = `${spec.info.title} API ${spec.info.version}`;
    root.replaceChildren(h("div", { class: "wide" },
      h("h1", { id: "docs-title" }, `${spec.info.title} API `, h("span", { class: "muted" }, spec.info.version)),
      spec.info.description ? h("p", {}, spec.info.description) : null,
      h("p", { class: "muted" }, "The machine-readable description is ", h("a", { href: "openapi.json" }, "/openapi.json"), "."),
      Array.from(byTag.entries()).map(([tag, ops]) => h("div", { class: "tag-group" }, h("h2", {}, tag), ops)),
      h("h2", {}, "Schemas"), schemas.map(([name, schema]) => schemaPanel(name, schema))));
  }

  main();
})();
