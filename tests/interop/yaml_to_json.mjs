// Prints a YAML file as JSON, parsed by the same `yaml` package the conformance suite uses.
// Usage: node yaml_to_json.mjs <file.yml>
import { readFileSync } from "node:fs";
import { parse } from "yaml";

console.log(JSON.stringify(parse(readFileSync(process.argv[2], "utf8"))));
