"""Validates rendered Kubernetes manifests offline, as the API server would (docs/deploy.md#checks).

Usage: validate-manifests.py <crd-dir> <kubernetes-version> < rendered.yaml

Built-in kinds are checked by kubernetes-validate against the Kubernetes OpenAPI schemas of the
given version, strictly (an unknown field is an error, as `kubectl apply --validate=strict`
makes it). Custom resources are checked against the openAPIV3Schema of their CRD, read from
<crd-dir>, closed the same way: an object schema that lists properties and does not preserve
unknown fields refuses any other field (the API server would prune it silently, and a value that
vanishes on apply is a bug). Exits 1 naming each object and problem, 2 on bad usage.
"""
import copy
import glob
import os
import sys

import jsonschema
import kubernetes_validate
import yaml


def load_crds(directory):
    crds = {}
    for path in sorted(glob.glob(os.path.join(directory, "*.yaml"))):
        for doc in yaml.safe_load_all(open(path)):
            if not doc or doc.get("kind") != "CustomResourceDefinition":
                continue
            group, kind = doc["spec"]["group"], doc["spec"]["names"]["kind"]
            for version in doc["spec"]["versions"]:
                if version.get("served", True):
                    crds[(f"{group}/{version['name']}", kind)] = closed(version["schema"]["openAPIV3Schema"])
    return crds


def closed(schema):
    """The schema with additionalProperties false wherever the API server would prune unknown fields."""
    schema = copy.deepcopy(schema)

    def walk(node):
        if isinstance(node, dict):
            if (node.get("type") == "object" and "properties" in node and "additionalProperties" not in node
                    and not node.get("x-kubernetes-preserve-unknown-fields")):
                node["additionalProperties"] = False
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    # apiVersion, kind and metadata are the API server's, checked for every object alike.
    schema.setdefault("properties", {}).update({"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"}})
    return schema


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    crds, version = load_crds(sys.argv[1]), sys.argv[2]
    problems, count = [], 0
    for doc in yaml.safe_load_all(sys.stdin):
        if not doc:
            continue
        count += 1
        name = f"{doc.get('kind')}/{doc.get('metadata', {}).get('name')}"
        key = (doc.get("apiVersion"), doc.get("kind"))
        if key in crds:
            validator = jsonschema.Draft7Validator(crds[key])
            problems += [f"{name}: {'.'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}" for e in validator.iter_errors(doc)]
            continue
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.SchemaNotFoundError:
            problems.append(f"{name}: no schema for {key[0]} {key[1]} (neither Kubernetes {version} nor a CRD in {sys.argv[1]})")
        except kubernetes_validate.ValidationError as error:
            problems.append(f"{name}: {'.'.join(map(str, error.path)) or '(root)'}: {error.message}")
    for problem in problems:
        print(problem)
    print(f"{count} objects checked against Kubernetes {version} and {len(crds)} custom resource versions: {len(problems)} problems")
    return 1 if problems or count == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
