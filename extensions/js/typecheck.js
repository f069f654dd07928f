(function (v) {
  // A program over in-memory files only: the host reads nothing but `v.files`.
  const files = v.files;
  const options = { noLib: true, strict: true, noEmit: true, target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.CommonJS, moduleResolution: ts.ModuleResolutionKind.Node10, types: [] };
  // The library and the declarations are the same text call after call: parsed once per child.
  const parsed = (globalThis.__typecheckParsed = globalThis.__typecheckParsed || {});
  const parse = (name, lang) => {
    const known = parsed[name];
    if (known && known.text === files[name]) return known;
    const sf = ts.createSourceFile(name, files[name], lang, true);
    if (v.authored.indexOf(name) < 0) parsed[name] = sf;
    return sf;
  };
  const host = {
    getSourceFile: (name, lang) => files[name] === undefined ? undefined : parse(name, lang),
    getDefaultLibFileName: () => v.lib,
    writeFile: () => {},
    getCurrentDirectory: () => '/',
    getDirectories: () => [],
    fileExists: (name) => files[name] !== undefined,
    readFile: (name) => files[name],
    getCanonicalFileName: (name) => name,
    useCaseSensitiveFileNames: () => true,
    getNewLine: () => '\n',
  };
  const program = ts.createProgram(Object.keys(files), options, host);
  const checker = program.getTypeChecker();
  const found = [];
  const at = (node, code, message) => {
    const sf = node.getSourceFile();
    const pos = sf.getLineAndCharacterOfPosition(node.getStart(sf));
    found.push({ file: sf.fileName, start: node.getStart(sf), line: pos.line + 1,
      column: pos.character + 1, code, message, own: true });
  };
  // A generated write type (`…Write`, declared in the declarations file) and what its doc says.
  const writeType = (type) => {
    const t = checker.getNonNullableType(type);
    const sym = t.aliasSymbol || t.getSymbol();
    const decl = sym && sym.declarations && sym.declarations[0];
    if (!decl || !/Write$/.test(sym.name) || decl.getSourceFile().fileName !== v.declarations) {
      return null;
    }
    const info = { type: t, recordType: sym.name, protected: [] };
    for (const tag of ts.getJSDocTags(decl)) {
      const text = ts.getTextOfJSDocComment(tag.comment) || '';
      if (tag.tagName.text === 'recordType') info.recordType = text.trim();
      if (tag.tagName.text === 'readonlyFields') info.protected = text.split(/[\s,]+/);
    }
    return info;
  };
  // Excess and mistyped properties of a build's payload, at the property itself: TypeScript
  // skips the excess check on a callback's returned literal and reports a wrong type at the step.
  const payloadCheck = (node, w) => {
    for (const prop of node.properties) {
      if (!ts.isPropertyAssignment(prop) && !ts.isShorthandPropertyAssignment(prop)) continue;
      const key = prop.name && (ts.isIdentifier(prop.name) || ts.isStringLiteral(prop.name))
        ? prop.name.text : null;
      if (key === null) continue;
      const declared = w.type.getProperty(key);
      if (!declared && w.protected.indexOf(key) >= 0) {
        at(prop.name, 2353, `'${key}' is protected on ${w.recordType}: a build may not write it`);
      } else if (!declared) {
        at(prop.name, 2353, `Object literal may only specify known properties, and '${key}' `
          + `does not exist in type '${checker.typeToString(w.type)}' (${w.recordType})`);
      } else if (ts.isPropertyAssignment(prop)) {
        const want = checker.getTypeOfSymbolAtLocation(declared, prop);
        const got = checker.getTypeAtLocation(prop.initializer);
        if (!checker.isTypeAssignableTo(got, want)) {
          at(prop.initializer, 2322, `Type '${checker.typeToString(got)}' is not assignable to `
            + `type '${checker.typeToString(want)}' (${w.recordType}.${key})`);
        }
      }
    }
  };
  const visit = (node) => {
    if (ts.isObjectLiteralExpression(node)) {
      const contextual = checker.getContextualType(node);
      const w = contextual && writeType(contextual);
      if (w) payloadCheck(node, w);
    }
    ts.forEachChild(node, visit);
  };
  const authored = program.getSourceFiles().filter((sf) => v.authored.indexOf(sf.fileName) >= 0);
  authored.forEach(visit);
  // Only the author's files are checked: the declarations and the library are trusted.
  const diagnostics = [];
  for (const sf of authored) {
    diagnostics.push(...program.getSyntacticDiagnostics(sf), ...program.getSemanticDiagnostics(sf));
  }
  for (const d of diagnostics) {
    if (!d.file || v.authored.indexOf(d.file.fileName) < 0) continue;
    const pos = d.file.getLineAndCharacterOfPosition(d.start || 0);
    // The span a finding of our own may explain: the object literal (the step) the error is in.
    let node = ts.getTokenAtPosition(d.file, d.start || 0);
    while (node.parent && !ts.isObjectLiteralExpression(node)) node = node.parent;
    found.push({ file: d.file.fileName, start: node.getStart(d.file), end: node.end,
      line: pos.line + 1, column: pos.character + 1, code: d.code,
      message: ts.flattenDiagnosticMessageText(d.messageText, '\n').split('\n')[0] });
  }
  return found;
})(dukpy)
