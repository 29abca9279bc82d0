// The risk rules of the issue that asked for them, as a COUNTERSIGN_CONFIG file says them: the
// unit tests check what they match, the e2e tests run the bot with them.

export const ISSUE_RISKS = `
risks:
  - name: force-push
    match:
      commands: ["git push --force*", "git push -f*", "kubectl delete *"]
    warning: Rewrites shared history
    quorum: 2
  - name: secrets
    match:
      paths: ["**/.env", "/etc/**", "**/*.pem"]
    warning: Touches secrets
    approvers: { usergroups: [S0SECURITY] }
  - name: production
    match:
      targets: ["*.prod.example.com"]
      tools: ["deploy_*"]
    warning: Production
`;
